//! The body of a saved run, read once its header has been checked: the
//! fields compare reads go straight into their types, every other field
//! (the worker reports, raw samples, the evidence) is skipped without
//! being built, and the scenario, kept as JSON, is a [`Bounded`] value.
//! Which field was damaged is noted for the error.

use std::cell::Cell;
use std::fmt;

use serde::de::{self, DeserializeSeed, IgnoredAny, MapAccess, Visitor};
use serde::{Deserialize, Deserializer};
use serde_json::Value;

use runq_common::json_read::{Bounded, HeaderValue};

use crate::results::{GroupFigures, HostFacts};

/// The most values a saved scenario may hold: a scenario of a hundred
/// groups, each with its parameters and steps, holds a few thousand.
pub(crate) const MAX_SCENARIO_VALUES: usize = 100_000;

/// One repeat: its groups' figures (the rest of it is skipped).
#[derive(Deserialize)]
pub(crate) struct SavedRepeat {
    pub(crate) groups: Vec<GroupFigures>,
}

/// The top-level fields compare reads, each absent until read.
#[derive(Default)]
pub(crate) struct Body {
    pub(crate) host: Option<HostFacts>,
    pub(crate) scenario_spec: Option<Value>,
    pub(crate) scenario: Option<HeaderValue>,
    pub(crate) repeats: Option<Vec<SavedRepeat>>,
}

/// The names of the fields read; any other is skipped.
#[derive(Deserialize)]
#[serde(field_identifier, rename_all = "snake_case")]
enum Field {
    Host,
    ScenarioSpec,
    Scenario,
    Repeats,
    #[serde(other)]
    Other,
}

/// Reads a [`Body`]; on an error, `failed` holds the field whose value
/// was damaged (or given twice).
#[derive(Clone, Copy)]
pub(crate) struct BodySeed<'a> {
    pub(crate) failed: &'a Cell<Option<&'static str>>,
}

impl BodySeed<'_> {
    /// `slot`'s value read from `map`, noting `name` when it is damaged
    /// or was read before.
    fn read<'de, T: Deserialize<'de>, A: MapAccess<'de>>(
        self,
        name: &'static str,
        slot: &mut Option<T>,
        map: &mut A,
    ) -> Result<(), A::Error> {
        if slot.is_some() {
            self.failed.set(Some(name));
            return Err(de::Error::duplicate_field(name));
        }
        match map.next_value() {
            Ok(v) => {
                *slot = Some(v);
                Ok(())
            }
            Err(e) => {
                self.failed.set(Some(name));
                Err(e)
            }
        }
    }
}

impl<'de> DeserializeSeed<'de> for BodySeed<'_> {
    type Value = Body;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Body, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for BodySeed<'_> {
    type Value = Body;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a saved run (a JSON object)")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Body, A::Error> {
        let mut body = Body::default();
        let mut spec: Option<Bounded<MAX_SCENARIO_VALUES>> = None;
        while let Some(field) = map.next_key::<Field>()? {
            match field {
                Field::Host => self.read("host", &mut body.host, &mut map)?,
                Field::ScenarioSpec => self.read("scenario_spec", &mut spec, &mut map)?,
                Field::Scenario => self.read("scenario", &mut body.scenario, &mut map)?,
                Field::Repeats => self.read("repeats", &mut body.repeats, &mut map)?,
                Field::Other => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        body.scenario_spec = spec.map(|b| b.0);
        Ok(body)
    }
}

/// The body of `text`, and the field that was damaged when it could not
/// be read.
pub(crate) fn read_body(text: &str) -> Result<Body, (Option<&'static str>, serde_json::Error)> {
    let failed = Cell::new(None);
    let mut de = serde_json::Deserializer::from_str(text);
    let body = BodySeed { failed: &failed }
        .deserialize(&mut de)
        .and_then(|b| de.end().map(|()| b));
    body.map_err(|e| (failed.get(), e))
}
