//! Reading runq's JSON documents back without trusting them: the header
//! (`tool`, `schema_version` and whatever else tells the file apart) read
//! before the body, every other field skipped without being built
//! ([`read_header`], [`HeaderValue`]); the free-form parts of a body (a
//! scenario, a VM's facts) as a [`serde_json::Value`] of a bounded number
//! of values ([`Bounded`]), its lists of a bounded length
//! ([`BoundedVec`]), and the whole document within one budget of parts
//! ([`with_budget`]), so a hostile file's memory stays a small multiple of
//! its size.

use std::cell::Cell;
use std::fmt;
use std::marker::PhantomData;

use serde::de::{self, DeserializeOwned, DeserializeSeed, IgnoredAny, MapAccess, SeqAccess};
use serde::{Deserialize, Deserializer};
use serde_json::{Map, Number, Value};

use crate::text::printable;

/// The longest string an error shows of a header field.
const SHOWN_CHARS: usize = 80;

/// A header field as read: a string or an unsigned integer as it is;
/// anything else only by its kind (an array or an object is skipped,
/// never built).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HeaderValue {
    /// A string.
    Str(String),
    /// An unsigned integer.
    U64(u64),
    /// Another value, as an error names it: `-1`, `1.5`, `true`, `null`,
    /// `an array`, `an object`.
    Other(String),
}

impl HeaderValue {
    /// The string, when it is one.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            HeaderValue::Str(s) => Some(s),
            _ => None,
        }
    }

    /// The unsigned integer, when it is one.
    pub fn as_u64(&self) -> Option<u64> {
        match self {
            HeaderValue::U64(n) => Some(*n),
            _ => None,
        }
    }
}

/// A string quoted and made printable (cut after [`SHOWN_CHARS`]
/// characters), a number as it is, anything else by its kind: safe to put
/// in a one-line error.
impl fmt::Display for HeaderValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HeaderValue::Str(s) => {
                let cut: String = s.chars().take(SHOWN_CHARS).collect();
                let more = if cut.len() < s.len() { "..." } else { "" };
                write!(f, "\"{}{more}\"", printable(&cut))
            }
            HeaderValue::U64(n) => write!(f, "{n}"),
            HeaderValue::Other(what) => f.write_str(what),
        }
    }
}

struct HeaderVisitor;

impl<'de> de::Visitor<'de> for HeaderVisitor {
    type Value = HeaderValue;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E>(self, v: bool) -> Result<HeaderValue, E> {
        Ok(HeaderValue::Other(v.to_string()))
    }

    fn visit_i64<E>(self, v: i64) -> Result<HeaderValue, E> {
        Ok(HeaderValue::Other(v.to_string()))
    }

    fn visit_u64<E>(self, v: u64) -> Result<HeaderValue, E> {
        Ok(HeaderValue::U64(v))
    }

    fn visit_f64<E>(self, v: f64) -> Result<HeaderValue, E> {
        Ok(HeaderValue::Other(v.to_string()))
    }

    fn visit_str<E>(self, v: &str) -> Result<HeaderValue, E> {
        Ok(HeaderValue::Str(v.to_string()))
    }

    fn visit_string<E>(self, v: String) -> Result<HeaderValue, E> {
        Ok(HeaderValue::Str(v))
    }

    fn visit_unit<E>(self) -> Result<HeaderValue, E> {
        Ok(HeaderValue::Other("null".into()))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<HeaderValue, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(HeaderValue::Other("an array".into()))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<HeaderValue, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(HeaderValue::Other("an object".into()))
    }
}

impl<'de> Deserialize<'de> for HeaderValue {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(HeaderVisitor)
    }
}

/// The two fields every runq document starts with.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct DocHeader {
    /// The command that wrote it.
    pub tool: Option<HeaderValue>,
    /// The version of its layout.
    pub schema_version: Option<HeaderValue>,
}

/// The header `H` of the JSON document `text` (a struct of optional
/// [`HeaderValue`] fields: every other field is skipped, nothing large is
/// built); `Ok(None)` for JSON that is not an object (serde would read an
/// array into a struct field by field); an error for text that is not
/// JSON, or is cut short.
pub fn read_header<H: DeserializeOwned>(text: &str) -> serde_json::Result<Option<H>> {
    let first = text.bytes().find(|b| !b.is_ascii_whitespace());
    if first != Some(b'{') {
        serde_json::from_str::<IgnoredAny>(text)?;
        return Ok(None);
    }
    serde_json::from_str(text).map(Some)
}

/// A [`Value`] of at most `MAX` values (every array, object, string,
/// number, bool and null counts one): for the free-form parts of a
/// document, which a hostile file could otherwise make a `Value` 16 times
/// its size. Deeper nesting is bounded by serde_json's recursion limit.
#[derive(Debug, Clone, PartialEq)]
pub struct Bounded<const MAX: usize>(pub Value);

impl<'de, const MAX: usize> Deserialize<'de> for Bounded<MAX> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let left = Cell::new(MAX);
        Budget {
            left: &left,
            max: MAX,
        }
        .deserialize(d)
        .map(Bounded)
    }
}

thread_local! {
    /// What [`with_budget`] has left to build, while a parse runs under it.
    static DOC_LEFT: Cell<Option<usize>> = const { Cell::new(None) };
}

/// Puts back the budget a [`with_budget`] replaced, even on a panic.
struct Restore(Option<usize>);

impl Drop for Restore {
    fn drop(&mut self) {
        DOC_LEFT.with(|c| c.set(self.0));
    }
}

/// Runs `parse` with at most `max` parts built in all by the [`Bounded`]
/// values (each of their values) and [`BoundedVec`]s (each element) it
/// reads on this thread: a document of many small parts is bounded as a
/// whole, not only part by part.
pub fn with_budget<R>(max: usize, parse: impl FnOnce() -> R) -> R {
    let _restore = Restore(DOC_LEFT.with(|c| c.replace(Some(max))));
    parse()
}

/// Takes one part of the document's budget, when a parse runs under one.
fn take_part<E: de::Error>() -> Result<(), E> {
    DOC_LEFT.with(|c| match c.get() {
        None => Ok(()),
        Some(0) => Err(E::custom("more parts than runq writes in a document")),
        Some(n) => {
            c.set(Some(n - 1));
            Ok(())
        }
    })
}

/// A list of at most `MAX` elements, refused as soon as it has more (each
/// element also takes a part of a [`with_budget`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BoundedVec<T, const MAX: usize>(pub Vec<T>);

impl<T, const MAX: usize> Default for BoundedVec<T, MAX> {
    fn default() -> Self {
        BoundedVec(Vec::new())
    }
}

struct VecVisitor<T, const MAX: usize>(PhantomData<T>);

impl<'de, T: Deserialize<'de>, const MAX: usize> de::Visitor<'de> for VecVisitor<T, MAX> {
    type Value = BoundedVec<T, MAX>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "a list of at most {MAX} items")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element()? {
            if items.len() == MAX {
                return Err(de::Error::custom(format_args!(
                    "more than {MAX} items: not what runq writes"
                )));
            }
            take_part()?;
            items.push(item);
        }
        Ok(BoundedVec(items))
    }
}

impl<'de, T: Deserialize<'de>, const MAX: usize> Deserialize<'de> for BoundedVec<T, MAX> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_seq(VecVisitor(PhantomData))
    }
}

/// Builds a [`Value`] while counting its values down from `max`.
#[derive(Clone, Copy)]
struct Budget<'a> {
    left: &'a Cell<usize>,
    max: usize,
}

impl Budget<'_> {
    fn take<E: de::Error>(self) -> Result<(), E> {
        match self.left.get() {
            0 => Err(E::custom(format_args!(
                "more than {} values: not what runq writes",
                self.max
            ))),
            n => {
                self.left.set(n - 1);
                take_part()
            }
        }
    }
}

impl<'de> DeserializeSeed<'de> for Budget<'_> {
    type Value = Value;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> de::Visitor<'de> for Budget<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Value, E> {
        self.take()?;
        Ok(Value::Bool(v))
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Value, E> {
        self.take()?;
        Ok(Value::Number(v.into()))
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Value, E> {
        self.take()?;
        Ok(Value::Number(v.into()))
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Value, E> {
        self.take()?;
        Ok(Number::from_f64(v).map_or(Value::Null, Value::Number))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Value, E> {
        self.take()?;
        Ok(Value::String(v.to_string()))
    }

    fn visit_string<E: de::Error>(self, v: String) -> Result<Value, E> {
        self.take()?;
        Ok(Value::String(v))
    }

    fn visit_unit<E: de::Error>(self) -> Result<Value, E> {
        self.take()?;
        Ok(Value::Null)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        self.take()?;
        let mut items = Vec::new();
        while let Some(v) = seq.next_element_seed(self)? {
            items.push(v);
        }
        Ok(Value::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        self.take()?;
        let mut out = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            let v = map.next_value_seed(self)?;
            out.insert(key, v);
        }
        Ok(Value::Object(out))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_header_is_read_and_the_rest_skipped() {
        let h: DocHeader =
            read_header(r#"{"rows":[1,[2,{"a":3}]],"tool":"runq run","schema_version":2}"#)
                .unwrap()
                .unwrap();
        assert_eq!(h.tool, Some(HeaderValue::Str("runq run".into())));
        assert_eq!(
            h.schema_version.as_ref().and_then(HeaderValue::as_u64),
            Some(2)
        );
        let h: DocHeader = read_header(r#"{"tool":[0,0],"schema_version":-1}"#)
            .unwrap()
            .unwrap();
        assert_eq!(h.tool.unwrap().to_string(), "an array");
        assert_eq!(h.schema_version.unwrap().to_string(), "-1");
        let h: DocHeader = read_header("{}").unwrap().unwrap();
        assert_eq!((h.tool, h.schema_version), (None, None));
    }

    #[test]
    fn not_an_object_and_not_json_are_told_apart() {
        assert_eq!(read_header::<DocHeader>(r#"["runq run",1]"#).unwrap(), None);
        assert_eq!(read_header::<DocHeader>(" 5").unwrap(), None);
        assert!(read_header::<DocHeader>("hello").unwrap_err().is_syntax());
        assert!(read_header::<DocHeader>(r#"{"tool":"#)
            .unwrap_err()
            .is_eof());
    }

    #[test]
    fn a_shown_string_is_printable_and_short() {
        let v = HeaderValue::Str(format!("\x1b[2J{}", "x".repeat(200)));
        let shown = v.to_string();
        assert!(
            shown.starts_with("\"\\x1b[2Jxxx") && shown.ends_with("...\""),
            "{shown}"
        );
        assert!(shown.chars().count() < 100, "{shown}");
        assert_eq!(HeaderValue::Str("fio".into()).to_string(), "\"fio\"");
    }

    #[test]
    fn a_bounded_list_is_refused_past_its_length() {
        let v: BoundedVec<u8, 3> = serde_json::from_str("[1,2,3]").unwrap();
        assert_eq!(v.0, [1, 2, 3]);
        let e = serde_json::from_str::<BoundedVec<u8, 3>>("[1,2,3,4]").unwrap_err();
        assert!(e.to_string().contains("more than 3 items"), "{e}");
        assert!(serde_json::from_str::<BoundedVec<u8, 3>>("{}").is_err());
    }

    #[test]
    fn a_budget_bounds_the_whole_document() {
        type Doc = (BoundedVec<String, 10>, Bounded<10>);
        let text = r#"[["a","b","c"],[1,2,3]]"#;
        let ok = with_budget(7, || serde_json::from_str::<Doc>(text));
        assert_eq!(
            ok.unwrap().0 .0.len(),
            3,
            "3 strings, an array and 3 numbers"
        );
        let e = with_budget(6, || serde_json::from_str::<Doc>(text)).unwrap_err();
        assert!(e.to_string().contains("more parts than runq writes"), "{e}");
        assert!(
            serde_json::from_str::<Doc>(text).is_ok(),
            "no budget outside"
        );
        let nested = with_budget(1, || with_budget(100, || serde_json::from_str::<Doc>(text)));
        assert!(nested.is_ok());
        assert!(
            with_budget(1, || serde_json::from_str::<Doc>(text)).is_err(),
            "restored"
        );
    }

    #[test]
    fn a_bounded_value_is_built_within_its_budget() {
        let text = r#"{"a":[1,2.5,"x",null,true],"b":{"c":-3}}"#;
        let v: Bounded<9> = serde_json::from_str(text).unwrap();
        assert_eq!(v.0, serde_json::from_str::<Value>(text).unwrap());
        let e = serde_json::from_str::<Bounded<8>>(text).unwrap_err();
        assert!(e.to_string().contains("more than 8 values"), "{e}");
        let e = serde_json::from_str::<Bounded<1000>>(&format!("[{}0]", "0,".repeat(5000)));
        assert!(e.is_err());
    }
}
