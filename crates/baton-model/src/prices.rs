//! Prices out of the box: USD per million tokens (input, output, cached input, cache write) of
//! the Anthropic, OpenAI, Google and DeepSeek models, so that costs and `--budget-usd` work
//! without a `[prices]` table.
//!
//! How a route is priced, first match wins ([`price_of`]): the config's `[prices."provider/model"]`;
//! this table, by model name (without a vendor prefix, and without a date suffix such as
//! `-20250929` when the dated name is not listed itself); the config's `[prices."provider/*"]`,
//! which the config loader sets to zero for a local server (`routes::price_local_servers`) (a loopback `base_url`, or a cassette)
//! unless the user wrote one; else the route is unpriced.
//!
//! Long-context tiers (a higher price for requests over 200,000 or 272,000 input tokens on some
//! models) are not applied: such requests are priced at the base rate.

use std::collections::BTreeMap;

use baton_protocol::config::Price;
use baton_protocol::Route;

/// Where the table was read from.
pub const SOURCE: &str =
    "@earendil-works/pi-ai 1.6.0 (npm, published 2026-11-20), dist/models.generated.js";
/// When it was read.
pub const READ_ON: &str = "2026-12-05";

baton_protocol::closed_set! {
    /// Where a route's price comes from.
    pub enum PriceSource ("price source") {
        /// `[prices."provider/model"]`.
        Config = "config",
        /// The built-in table ([`SOURCE`], read [`READ_ON`]).
        BuiltIn = "built-in",
        /// `[prices."provider/*"]`: the provider's price for the models above leave out (zero for a
        /// local server unless configured).
        Provider = "provider",
    }
}

/// `None` where the source gives no cache-write price: [`crate::routes::cost`] then charges
/// 1.25 × input (OpenAI, Google and DeepSeek report no cache writes, so it does not apply there).
const NONE: f64 = -1.0;

const fn p(
    model: &'static str,
    input: f64,
    output: f64,
    cached: f64,
    write: f64,
) -> (&'static str, [f64; 4]) {
    (model, [input, output, cached, write])
}

/// The built-in table, from [`SOURCE`].
const TABLE: &[(&str, [f64; 4])] = &[
    p("claude-fable-5", 10.0, 50.0, 1.0, 12.5),
    p("claude-fable-5-1", 10.0, 50.0, 0.25, 12.5),
    p("claude-fable-5-2", 8.0, 40.0, 0.2, 10.0),
    p("claude-haiku-4-5", 1.0, 5.0, 0.1, 1.25),
    p("claude-haiku-4-5-20251001", 1.0, 5.0, 0.1, 1.25),
    p("claude-haiku-5-5", 0.1, 0.5, 0.01, 0.125),
    p("claude-opus-4-5", 5.0, 25.0, 0.5, 6.25),
    p("claude-opus-4-5-20251101", 5.0, 25.0, 0.5, 6.25),
    p("claude-opus-4-6", 5.0, 25.0, 0.5, 6.25),
    p("claude-opus-4-7", 5.0, 25.0, 0.5, 6.25),
    p("claude-opus-4-8", 5.0, 25.0, 0.5, 6.25),
    p("claude-opus-5", 5.0, 25.0, 0.5, 6.25),
    p("claude-opus-5-5", 4.0, 20.0, 0.2, 5.0),
    p("claude-sonnet-4-5", 3.0, 15.0, 0.3, 3.75),
    p("claude-sonnet-4-5-20250929", 3.0, 15.0, 0.3, 3.75),
    p("claude-sonnet-4-6", 3.0, 15.0, 0.3, 3.75),
    p("claude-sonnet-5", 2.0, 10.0, 0.2, 2.5),
    p("claude-sonnet-5-5", 2.0, 10.0, 0.1, 2.5),
    p("chat-latest", 5.0, 30.0, 0.5, NONE),
    p("gpt-4", 30.0, 60.0, 0.0, NONE),
    p("gpt-4-turbo", 10.0, 30.0, 0.0, NONE),
    p("gpt-4.1", 2.0, 8.0, 0.5, NONE),
    p("gpt-4.1-mini", 0.4, 1.6, 0.1, NONE),
    p("gpt-4.1-nano", 0.1, 0.4, 0.025, NONE),
    p("gpt-4o", 2.5, 10.0, 1.25, NONE),
    p("gpt-4o-2024-05-13", 5.0, 15.0, 0.0, NONE),
    p("gpt-4o-2024-08-06", 2.5, 10.0, 1.25, NONE),
    p("gpt-4o-2024-11-20", 2.5, 10.0, 1.25, NONE),
    p("gpt-4o-mini", 0.15, 0.6, 0.075, NONE),
    p("gpt-5", 1.25, 10.0, 0.125, NONE),
    p("gpt-5-chat-latest", 1.25, 10.0, 0.125, NONE),
    p("gpt-5-mini", 0.25, 2.0, 0.025, NONE),
    p("gpt-5-nano", 0.05, 0.4, 0.005, NONE),
    p("gpt-5-pro", 15.0, 120.0, 0.0, NONE),
    p("gpt-5.1", 1.25, 10.0, 0.125, NONE),
    p("gpt-5.2", 1.75, 14.0, 0.175, NONE),
    p("gpt-5.2-pro", 21.0, 168.0, 0.0, NONE),
    p("gpt-5.3-codex", 1.75, 14.0, 0.175, NONE),
    p("gpt-5.3-codex-spark", 1.75, 14.0, 0.175, NONE),
    p("gpt-5.4", 2.5, 15.0, 0.25, NONE),
    p("gpt-5.4-mini", 0.75, 4.5, 0.075, NONE),
    p("gpt-5.4-nano", 0.2, 1.25, 0.02, NONE),
    p("gpt-5.4-pro", 30.0, 180.0, 0.0, NONE),
    p("gpt-5.5", 5.0, 30.0, 0.5, NONE),
    p("gpt-5.5-pro", 30.0, 180.0, 0.0, NONE),
    p("gpt-5.6-cyber", 12.5, 75.0, 1.25, 15.625),
    p("gpt-5.6-luna", 0.2, 1.2, 0.02, 0.25),
    p("gpt-5.6-sol", 4.0, 20.0, 0.4, 5.0),
    p("gpt-5.6-terra", 2.0, 12.0, 0.2, 2.5),
    p("gpt-6-astra", 10.0, 50.0, 1.0, 12.5),
    p("gpt-6-cyber", 20.0, 100.0, 2.0, 25.0),
    p("gpt-6-luna", 0.1, 0.5, 0.01, 0.125),
    p("gpt-6-sol", 2.0, 10.0, 0.2, 2.5),
    p("gpt-6.1-sol", 2.0, 10.0, 0.1, 2.5),
    p("gpt-6.1-terra", 1.0, 5.0, 0.05, 1.25),
    p("gpt-6.2-astra", 8.0, 40.0, 0.4, 10.0),
    p("gpt-6.2-sol", 2.0, 10.0, 0.1, 2.5),
    p("gpt-daybreak-blue-latest", 4.0, 20.0, 0.4, 5.0),
    p("gpt-daybreak-red-latest", 12.5, 75.0, 1.25, 15.625),
    p("o1", 15.0, 60.0, 7.5, NONE),
    p("o1-pro", 150.0, 600.0, 0.0, NONE),
    p("o3", 2.0, 8.0, 0.5, NONE),
    p("o3-mini", 1.1, 4.4, 0.55, NONE),
    p("o3-pro", 20.0, 80.0, 0.0, NONE),
    p("o4-mini", 1.1, 4.4, 0.275, NONE),
    p("deep-research-max-preview-04-2026", 2.0, 12.0, 0.2, NONE),
    p("deep-research-preview-04-2026", 2.0, 12.0, 0.2, NONE),
    p(
        "gemini-2.5-computer-use-preview-10-2025",
        1.25,
        10.0,
        0.0,
        NONE,
    ),
    p("gemini-2.5-flash", 0.3, 2.5, 0.03, NONE),
    p("gemini-2.5-flash-lite", 0.1, 0.4, 0.01, NONE),
    p("gemini-2.5-pro", 1.25, 10.0, 0.125, NONE),
    p("gemini-3-flash-preview", 0.5, 3.0, 0.05, NONE),
    p("gemini-3.1-flash-lite", 0.25, 1.5, 0.025, NONE),
    p("gemini-3.1-flash-lite-preview", 0.25, 1.5, 0.025, NONE),
    p("gemini-3.1-pro-preview", 2.0, 12.0, 0.2, NONE),
    p("gemini-3.1-pro-preview-customtools", 2.0, 12.0, 0.2, NONE),
    p("gemini-3.5-flash", 1.5, 9.0, 0.15, NONE),
    p("gemini-3.5-flash-lite", 0.3, 2.5, 0.03, NONE),
    p("gemini-3.6-flash", 0.75, 3.75, 0.075, NONE),
    p("gemini-3.7-flash", 0.75, 3.75, 0.075, NONE),
    p("gemini-3.8-flash", 0.75, 3.75, 0.075, NONE),
    p("gemini-4-argon", 2.0, 10.0, 0.1, NONE),
    p("gemini-4-carbon", 2.0, 10.0, 0.1, NONE),
    p("gemini-4-hydrogen", 1.5, 7.5, 0.075, NONE),
    p("gemini-4-neon", 3.0, 15.0, 0.15, NONE),
    p("gemini-flash-latest", 1.5, 9.0, 0.15, NONE),
    p("gemini-flash-lite-latest", 0.25, 1.5, 0.025, NONE),
    p("gemini-pro-latest", 2.0, 12.0, 0.2, NONE),
    p("gemini-robotics-er-2-preview", 1.0, 5.0, 0.1, NONE),
    p("deepseek-flash", 0.3, 1.2, 0.006, NONE),
    p("deepseek-v4-pro", 1.32, 3.96, 0.044, NONE),
];

/// The built-in price of `model` (a vendor prefix and a date suffix ignored, see the module).
pub fn builtin(model: &str) -> Option<Price> {
    let name = crate::catalog::bare(model);
    let find = |n: &str| TABLE.iter().find(|(m, _)| *m == n).map(|(_, v)| *v);
    let v = find(name).or_else(|| find(undated(name)?))?;
    Some(Price {
        input: v[0],
        output: v[1],
        cached_input: Some(v[2]),
        cache_write: (v[3] >= 0.0).then_some(v[3]),
    })
}

/// `name` without a trailing `-YYYYMMDD` or `-YYYY-MM-DD`.
fn undated(name: &str) -> Option<&str> {
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    if let Some((head, tail)) = name.rsplit_once('-') {
        if tail.len() == 8 && digits(tail) {
            return Some(head);
        }
    }
    let b = name.as_bytes();
    let n = b.len();
    if n > 11 && b[n - 11] == b'-' && b[n - 6] == b'-' && b[n - 3] == b'-' {
        let (y, m, d) = (&name[n - 10..n - 6], &name[n - 5..n - 3], &name[n - 2..]);
        if digits(y) && digits(m) && digits(d) {
            return Some(&name[..n - 11]);
        }
    }
    None
}

/// The price of `route` and where it comes from (see the module for the order).
pub fn price_of(prices: &BTreeMap<String, Price>, route: &Route) -> Option<(Price, PriceSource)> {
    if let Some(p) = prices.get(&format!("{}/{}", route.provider, route.model)) {
        return Some((*p, PriceSource::Config));
    }
    if let Some(p) = builtin(&route.model) {
        return Some((p, PriceSource::BuiltIn));
    }
    prices
        .get(&format!("{}/*", route.provider))
        .map(|p| (*p, PriceSource::Provider))
}

/// Whether an API root points at this machine (`localhost`, `127.*`, `::1`).
pub fn is_loopback(url: &str) -> bool {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let authority = rest.split('/').next().unwrap_or("");
    let host = match authority.strip_prefix('[') {
        Some(v6) => v6.split(']').next().unwrap_or(""),
        None => authority.split(':').next().unwrap_or(""),
    };
    host == "localhost" || host == "::1" || host.starts_with("127.")
}

/// The price of every model of a local server: nothing.
pub fn free() -> Price {
    Price {
        input: 0.0,
        output: 0.0,
        cached_input: Some(0.0),
        cache_write: Some(0.0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn route(s: &str) -> Route {
        s.parse().unwrap()
    }

    #[test]
    fn config_then_table_then_provider() {
        let mut prices = BTreeMap::new();
        let (p, s) = price_of(&prices, &route("anthropic/claude-sonnet-4-5")).unwrap();
        assert_eq!(s, PriceSource::BuiltIn);
        assert_eq!(
            (p.input, p.output, p.cached_input, p.cache_write),
            (3.0, 15.0, Some(0.3), Some(3.75))
        );
        // A vendor prefix (OpenRouter) and an unlisted date suffix are ignored.
        let (p, _) = price_of(&prices, &route("router/openai/gpt-5:high")).unwrap();
        assert_eq!((p.input, p.output, p.cache_write), (1.25, 10.0, None));
        assert_eq!(builtin("claude-opus-4-6-20260101").unwrap().input, 5.0);
        assert_eq!(builtin("gemini-2.5-pro-2025-06-17").unwrap().output, 10.0);
        assert!(price_of(&prices, &route("local/qwen3")).is_none());
        prices.insert("local/*".to_string(), free());
        assert_eq!(
            price_of(&prices, &route("local/qwen3")).unwrap().1,
            PriceSource::Provider
        );
        // A known model on a local proxy keeps its price; the config wins over both.
        assert_eq!(
            price_of(&prices, &route("local/gpt-5")).unwrap().1,
            PriceSource::BuiltIn
        );
        prices.insert(
            "local/gpt-5".to_string(),
            Price {
                input: 1.0,
                output: 2.0,
                cached_input: None,
                cache_write: None,
            },
        );
        let (p, s) = price_of(&prices, &route("local/gpt-5")).unwrap();
        assert_eq!((p.input, s), (1.0, PriceSource::Config));
    }

    #[test]
    fn every_entry_is_a_price() {
        for (m, v) in TABLE {
            assert!(
                v[0] > 0.0 && v[1] >= v[0] * 0.5 && v[2] >= 0.0 && v[2] <= v[0],
                "{m}: {v:?}"
            );
            assert!(v[3] == NONE || v[3] >= v[0], "{m}: {v:?}");
        }
        assert!(undated("gpt-5").is_none());
    }
}
