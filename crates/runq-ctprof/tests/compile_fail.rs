//! The metric registry's type guards: wrong pairings do not compile.

#[test]
fn wrong_reductions_do_not_compile() {
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/ui/*.rs");
}
