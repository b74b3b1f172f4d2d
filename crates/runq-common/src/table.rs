//! One text table printer for every report: columns as wide as their
//! widest cell (in chars, so `µs` counts once), left- or right-aligned,
//! two spaces apart, no trailing blanks. Every cell and header goes
//! through [`printable`]: a name with a control character (a newline, an
//! escape sequence) cannot break a row or reach the terminal.

use std::fmt::Write;

use crate::text::{printable, printable_owned};

/// A column's alignment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Align {
    /// Text columns.
    Left,
    /// Numbers.
    Right,
}

/// A table being built: a header and rows of cells.
#[derive(Debug)]
pub struct Table {
    header: Vec<String>,
    align: Vec<Align>,
    rows: Vec<Vec<String>>,
}

impl Table {
    /// A table with these `(header, alignment)` columns.
    pub fn new(columns: &[(&str, Align)]) -> Self {
        Table {
            header: columns
                .iter()
                .map(|(h, _)| printable(h).into_owned())
                .collect(),
            align: columns.iter().map(|(_, a)| *a).collect(),
            rows: Vec::new(),
        }
    }

    /// Adds a row (missing cells are empty, extra ones dropped; control
    /// characters escaped).
    pub fn row(&mut self, cells: Vec<String>) {
        self.rows
            .push(cells.into_iter().map(printable_owned).collect());
    }

    /// The header line and every row, each ending in `\n`. `style_header`
    /// wraps the header line (e.g. in bold).
    pub fn render(&self, style_header: impl Fn(&str) -> String) -> String {
        self.render_styled(style_header, str::to_string)
    }

    /// As [`Table::render`], with `style_row` wrapping each row line (e.g.
    /// in a colour).
    pub fn render_styled(
        &self,
        style_header: impl Fn(&str) -> String,
        style_row: impl Fn(&str) -> String,
    ) -> String {
        let widths: Vec<usize> = (0..self.header.len())
            .map(|c| {
                std::iter::once(&self.header)
                    .chain(&self.rows)
                    .map(|r| r.get(c).map_or(0, |s| s.chars().count()))
                    .max()
                    .unwrap_or(0)
            })
            .collect();
        let mut out = String::new();
        let _ = writeln!(out, "{}", style_header(&self.line(&self.header, &widths)));
        for r in &self.rows {
            let _ = writeln!(out, "{}", style_row(&self.line(r, &widths)));
        }
        out
    }

    fn line(&self, cells: &[String], widths: &[usize]) -> String {
        let last = widths.len().saturating_sub(1);
        let mut line = String::new();
        for (c, &w) in widths.iter().enumerate() {
            let cell = cells.get(c).map_or("", String::as_str);
            let pad = w.saturating_sub(cell.chars().count());
            if c > 0 {
                line.push_str("  ");
            }
            match self.align[c] {
                Align::Right => line.extend(std::iter::repeat_n(' ', pad).chain(cell.chars())),
                Align::Left if c == last => line.push_str(cell),
                Align::Left => line.extend(cell.chars().chain(std::iter::repeat_n(' ', pad))),
            }
        }
        line.truncate(line.trim_end().len());
        line
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_fit_their_widest_cell() {
        let mut t = Table::new(&[
            ("group", Align::Left),
            ("p99", Align::Right),
            ("note", Align::Left),
        ]);
        t.row(vec![
            "PriorityInversion".into(),
            "1.5µs".into(),
            "ok".into(),
        ]);
        t.row(vec!["a".into(), "12.25ms".into(), "".into()]);
        let text = t.render(str::to_string);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "group                  p99  note");
        assert_eq!(lines[1], "PriorityInversion    1.5µs  ok");
        assert_eq!(lines[2], "a                  12.25ms");
    }

    #[test]
    fn control_characters_in_cells_are_escaped_and_keep_one_line_a_row() {
        let mut t = Table::new(&[("comm", Align::Left), ("n", Align::Right)]);
        t.row(vec!["\x1b[2Jevil\nrow".into(), "1".into()]);
        t.row(vec!["ok".into(), "2".into()]);
        let text = t.render(str::to_string);
        assert!(!text.contains('\x1b'), "{text:?}");
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 3, "{text:?}");
        assert_eq!(lines[1], "\\x1b[2Jevil\\nrow  1");
        assert_eq!(lines[2], "ok                2");
    }

    #[test]
    fn the_header_and_rows_can_be_styled() {
        let mut t = Table::new(&[("a", Align::Left), ("b", Align::Right)]);
        t.row(vec!["x".into(), "".into()]);
        assert_eq!(t.render(|h| format!("<{h}>")), "<a  b>\nx\n");
        assert_eq!(
            t.render_styled(str::to_string, |r| format!("[{r}]")),
            "a  b\n[x]\n"
        );
    }
}
