//! Quantities written for people in configuration files: bandwidths (`"100Mbit"`, `"64kbit/s"`,
//! or a plain number of bit/s) and durations (`"1.5ms"`, `"250us"`, `"30s"`). One parser serves
//! every configuration format (topologies, daemon and gateway configs).

use core::fmt;
use core::str::FromStr;
use core::time::Duration;
use serde::de::{self, Deserializer, Visitor};
use serde::{Deserialize, Serialize, Serializer};

/// A bandwidth in bit/s.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Bandwidth(pub u64);

/// A duration written with a unit.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct TimeSpan(pub Duration);

fn split_number(s: &str) -> Result<(f64, &str), String> {
    let s = s.trim();
    let end = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '_'))
        .unwrap_or(s.len());
    let (num, unit) = s.split_at(end);
    let num: f64 = num
        .replace('_', "")
        .parse()
        .map_err(|_| format!("{s:?} does not start with a number"))?;
    Ok((num, unit.trim()))
}

impl FromStr for TimeSpan {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let (n, unit) = split_number(s)?;
        let scale = match unit {
            "ns" => 1.0,
            "us" | "µs" => 1e3,
            "ms" => 1e6,
            "s" => 1e9,
            "min" => 60e9,
            _ => {
                return Err(format!(
                    "{s:?}: a duration needs a unit: ns, us, ms, s or min (e.g. \"1ms\")"
                ));
            }
        };
        Ok(TimeSpan(Duration::from_nanos((n * scale).round() as u64)))
    }
}

impl FromStr for Bandwidth {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let (n, unit) = split_number(s)?;
        let unit = unit.strip_suffix("/s").unwrap_or(unit).to_ascii_lowercase();
        let scale = match unit.as_str() {
            "" | "bit" | "bps" | "b" => 1.0,
            "k" | "kbit" | "kbps" | "kb" => 1e3,
            "m" | "mbit" | "mbps" | "mb" => 1e6,
            "g" | "gbit" | "gbps" | "gb" => 1e9,
            _ => {
                return Err(format!(
                    "{s:?}: a bandwidth is in bit/s: bit, kbit, Mbit or Gbit (e.g. \"100Mbit\")"
                ));
            }
        };
        Ok(Bandwidth((n * scale).round() as u64))
    }
}

impl fmt::Display for Bandwidth {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            b if b >= 1_000_000_000 && b % 1_000_000_000 == 0 => {
                write!(f, "{}Gbit", b / 1_000_000_000)
            }
            b if b >= 1_000_000 && b % 1_000_000 == 0 => write!(f, "{}Mbit", b / 1_000_000),
            b if b >= 1_000 && b % 1_000 == 0 => write!(f, "{}kbit", b / 1_000),
            b => write!(f, "{b}bit"),
        }
    }
}

impl fmt::Display for TimeSpan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ns = self.0.as_nanos();
        match ns {
            n if n >= 1_000_000_000 && n % 1_000_000_000 == 0 => {
                write!(f, "{}s", n / 1_000_000_000)
            }
            n if n >= 1_000_000 && n % 1_000_000 == 0 => write!(f, "{}ms", n / 1_000_000),
            n if n >= 1_000 && n % 1_000 == 0 => write!(f, "{}us", n / 1_000),
            n => write!(f, "{n}ns"),
        }
    }
}

impl<'de> Deserialize<'de> for TimeSpan {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = TimeSpan;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a duration string with a unit, e.g. \"1ms\"")
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<TimeSpan, E> {
                s.parse().map_err(E::custom)
            }
        }
        d.deserialize_str(V)
    }
}

impl<'de> Deserialize<'de> for Bandwidth {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = Bandwidth;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("bit/s as an integer or a string like \"100Mbit\"")
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Bandwidth, E> {
                Ok(Bandwidth(v))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Bandwidth, E> {
                u64::try_from(v)
                    .map(Bandwidth)
                    .map_err(|_| E::custom("bandwidth must not be negative"))
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<Bandwidth, E> {
                s.parse().map_err(E::custom)
            }
        }
        d.deserialize_any(V)
    }
}

impl Serialize for Bandwidth {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl Serialize for TimeSpan {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_and_print() {
        let d = |s: &str| s.parse::<TimeSpan>().map(|t| t.0);
        assert_eq!(d("1.5ms"), Ok(Duration::from_micros(1500)));
        assert_eq!(d("250us"), Ok(Duration::from_micros(250)));
        assert_eq!(d("2s"), Ok(Duration::from_secs(2)));
        assert_eq!(d("3min"), Ok(Duration::from_secs(180)));
        assert!(d("2").is_err());
        let b = |s: &str| s.parse::<Bandwidth>().map(|b| b.0);
        assert_eq!(b("100Mbit"), Ok(100_000_000));
        assert_eq!(b("1Gbps"), Ok(1_000_000_000));
        assert_eq!(b("64 kbit/s"), Ok(64_000));
        assert_eq!(b("10MB/s"), Ok(10_000_000));
        assert!(b("fast").is_err());
        assert_eq!(Bandwidth(4_000_000).to_string(), "4Mbit");
        assert_eq!(Bandwidth(1500).to_string(), "1500bit");
        assert_eq!(TimeSpan(Duration::from_millis(1500)).to_string(), "1500ms");
        for s in ["4Mbit", "64kbit", "7bit"] {
            assert_eq!(s.parse::<Bandwidth>().unwrap().to_string(), s);
        }
    }
}
