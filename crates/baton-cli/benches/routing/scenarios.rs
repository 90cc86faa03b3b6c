//! The scripted scenarios of the routing benchmark, on the shop in `project/`: `Cart.tax()`
//! ignores the discount, so two tests of `tests/test_cart.py` fail.

use serde_json::{json, Value};

/// One step of a scenario. The routed run plays every act; the unsplit run only the
/// environment calls (`Work`, `Held`) and the final `Answer`.
pub enum Act {
    /// The Coordinator assigns a contract.
    Assign(&'static str),
    /// The Coordinator replaces the outstanding assignment: contract, reason.
    Replace(&'static str, &'static str),
    /// An environment call (`tag`, tool, arguments): the Executor's, or the unsplit session's.
    Work(&'static str, &'static str, Value),
    /// The whole suite, held until the user has typed (`tag`).
    Held(&'static str),
    /// The user's words, typed while the held call runs.
    Typed(&'static str),
    /// The Executor selects the results of these tags.
    Select(&'static [&'static str]),
    /// The Executor returns: report, outcome, limitations.
    Return(&'static str, &'static str, &'static [&'static str]),
    /// The Executor ends a turn with plain text instead of returning.
    Stray(&'static str),
    /// The Coordinator closes the unit, accepted, with this assessment.
    Close(&'static str),
    /// The final answer to the user.
    Answer(&'static str),
}

pub struct Scenario {
    pub name: &'static str,
    pub task: &'static str,
    pub acts: Vec<Act>,
}

impl Scenario {
    /// The line the user types mid-run, if the scenario has one (it then runs in `baton chat`).
    pub fn typed(&self) -> Option<&'static str> {
        self.acts.iter().find_map(|a| match a {
            Act::Typed(t) => Some(*t),
            _ => None,
        })
    }
}

fn bash(command: &str) -> Value {
    json!({ "command": command })
}

fn read(path: &str) -> Value {
    json!({ "path": path })
}

const SUITE: &str = "python3 -m unittest -v 2>&1";
const TAX_OLD: &str = "        return self.taxable_amount() * rate";
const TAX_NEW: &str = "        return self.taxable_amount() * (1 - self.discount_rate()) * rate";
const FIXED: &str = "Fixed: `Cart.tax()` now taxes the discounted amount; all 14 tests pass.";

use Act::*;

pub fn scenarios() -> Vec<Scenario> {
    vec![
        investigate_then_fix(),
        failed_first_attempt(),
        replace(),
        interrupted(),
        multi_assignment(),
    ]
}

/// Investigate, then fix: one assignment finds the cause, a second fixes it.
fn investigate_then_fix() -> Scenario {
    Scenario {
        name: "investigate-then-fix",
        task: "Two cart tests fail. Find out why and fix it.",
        acts: vec![
            Assign("Run the test suite, find why the failing cart tests fail, and return the cause. Select the failing output and the code at fault. Do not change files."),
            Work("suite", "bash", bash(SUITE)),
            Work("cart", "read", read("shop/cart.py")),
            Work("tests", "read", read("tests/test_cart.py")),
            Work("tax", "grep", json!({"pattern": "def tax", "path": "shop", "context": 4})),
            Select(&["suite", "tax"]),
            Return(
                "Cause: `Cart.tax()` multiplies the undiscounted taxable amount by the rate, so a discount lowers the subtotal but not the tax. Both failures (test_discount_lowers_the_tax_too, test_tax_is_on_the_discounted_amount) come from that line.",
                "completed",
                &[],
            ),
            Assign("In shop/cart.py, make `Cart.tax()` tax the discounted amount: multiply by (1 - self.discount_rate()). Change nothing else. Run the whole suite and select its output."),
            Work("edit", "edit", json!({"path": "shop/cart.py", "old_string": TAX_OLD, "new_string": TAX_NEW})),
            Work("pass", "bash", bash(SUITE)),
            Select(&["pass"]),
            Return("tax() now applies the discount before the rate; the suite passes (14 tests).", "completed", &[]),
            Close("The selected run shows all 14 tests passing after a one-line change in tax()."),
            Answer(FIXED),
        ],
    }
}

/// A failed first attempt: the Executor's fix of `total()` leaves a test failing; the second
/// assignment puts the fix where it belongs.
fn failed_first_attempt() -> Scenario {
    const TOTAL_OLD: &str = "        return pricing.to_cents(discounted + self.tax())";
    const TOTAL_TRY: &str =
        "        return pricing.to_cents(discounted + self.tax() * (1 - self.discount_rate()))";
    Scenario {
        name: "failed-first-attempt",
        task: "test_discount_lowers_the_tax_too fails. Fix it.",
        acts: vec![
            Assign("Make tests/test_cart.py's test_discount_lowers_the_tax_too pass with the smallest change to Cart.total(). Run the whole suite and select its output."),
            Work("cart", "read", read("shop/cart.py")),
            Work("try", "edit", json!({"path": "shop/cart.py", "old_string": TOTAL_OLD, "new_string": TOTAL_TRY})),
            Work("still", "bash", bash(SUITE)),
            Work("undo", "edit", json!({"path": "shop/cart.py", "old_string": TOTAL_TRY, "new_string": TOTAL_OLD})),
            Select(&["still"]),
            Return(
                "Discounting the tax inside total() made test_discount_lowers_the_tax_too pass, but test_tax_is_on_the_discounted_amount still fails: it calls tax() directly, which ignores the discount. I reverted my change; the fix belongs in tax().",
                "blocked",
                &["the fix the contract asked for cannot pass the whole suite"],
            ),
            Assign("Leave total() as it is. In shop/cart.py make `Cart.tax()` multiply by (1 - self.discount_rate()). Run the whole suite and select its output."),
            Work("edit", "edit", json!({"path": "shop/cart.py", "old_string": TAX_OLD, "new_string": TAX_NEW})),
            Work("pass", "bash", bash(SUITE)),
            Select(&["pass"]),
            Return("tax() applies the discount; all 14 tests pass.", "completed", &[]),
            Close("The second attempt passes the whole suite; the first was reverted."),
            Answer(FIXED),
        ],
    }
}

/// A replace: the Executor wanders on a vague contract and stops without returning; the
/// Coordinator replaces the assignment with a precise one.
fn replace() -> Scenario {
    const ROW_OLD: &str = "f\"{line.quantity} x {line.name} @ {line.unit_price}\"";
    const ROW_NEW: &str =
        "f\"{line.quantity} x {line.name} @ {line.unit_price} = {line.amount()}\"";
    Scenario {
        name: "replace",
        task: "Make the CLI summary show what each line costs.",
        acts: vec![
            Assign("Improve the CLI's output so each line's cost is visible."),
            Work("cli", "read", read("shop/cli.py")),
            Work("run", "bash", bash("python3 -m shop.cli CA < items.csv 2>&1")),
            Work("cart", "read", read("shop/cart.py")),
            Stray("The summary is built in Cart.summary(); the CLI only prints it."),
            Stray("I could change the CLI or the cart; which do you prefer?"),
            Stray("Waiting for a decision on where the change goes."),
            Replace(
                "In shop/cart.py, Cart.summary(): end each item row with ` = <line.amount()>`. Run `python3 -m shop.cli CA < items.csv` and the whole suite; select both outputs.",
                "the first contract did not say where the change goes",
            ),
            Work("edit", "edit", json!({"path": "shop/cart.py", "old_string": ROW_OLD, "new_string": ROW_NEW})),
            Work("after", "bash", bash("python3 -m shop.cli CA < items.csv 2>&1")),
            Work("suite", "bash", bash("python3 -m unittest 2>&1 | tail -4")),
            Select(&["after", "suite"]),
            Return(
                "Each item row now ends with its amount (`2 x Book @ 20.00 = 40.00`). The suite has the same 2 failures as before (tax and discount), unrelated to this change.",
                "completed",
                &["the two failing tax tests were failing before this change"],
            ),
            Close("The CLI output shows each line's amount; the failures are the known tax bug."),
            Answer("Each summary row now shows its amount, e.g. `2 x Book @ 20.00 = 40.00`."),
        ],
    }
}

/// An interrupted execution: the user narrows the task while the Executor runs the whole suite;
/// the Coordinator replaces the assignment.
fn interrupted() -> Scenario {
    Scenario {
        name: "interrupted",
        task: "Run the whole test suite and report every failure with its traceback.",
        acts: vec![
            Assign("Run the whole test suite and return every failure with its traceback, selected as evidence."),
            Work("list", "find", json!({"pattern": "test_*.py"})),
            Work("tp", "read", read("tests/test_pricing.py")),
            Work("tc", "read", read("tests/test_cart.py")),
            Held("suite"),
            Typed("Only the pricing module matters for this release: check just its tests."),
            Replace(
                "Run only tests/test_pricing.py (`python3 -m unittest tests.test_pricing -v`) and return its result, selected as evidence.",
                "the user narrowed the check to the pricing tests",
            ),
            Work("only", "bash", bash("python3 -m unittest tests.test_pricing -v 2>&1")),
            Work("module", "read", read("shop/pricing.py")),
            Select(&["only"]),
            Return("All 6 pricing tests pass; they cover tax_rate, to_cents, parse_price and taxable, every public function of shop/pricing.py.", "completed", &[]),
            Close("The selected run shows the 6 pricing tests passing."),
            Answer("The pricing tests all pass (6 of 6)."),
        ],
    }
}

/// A unit of three assignments: investigate, fix, document.
fn multi_assignment() -> Scenario {
    Scenario {
        name: "multi-assignment",
        task: "Fix the discount bug in the cart and document how discounts and tax combine.",
        acts: vec![
            Assign("Find why the failing cart tests fail. Select the failing output and the code at fault; change nothing."),
            Work("suite", "bash", bash(SUITE)),
            Work("cart", "read", read("shop/cart.py")),
            Work("pricing", "read", read("shop/pricing.py")),
            Work("uses", "grep", json!({"pattern": "discount", "path": "shop", "context": 2})),
            Select(&["suite", "uses"]),
            Return("Cart.tax() ignores discount_rate(); total() adds that undiscounted tax.", "completed", &[]),
            Assign("Make Cart.tax() multiply by (1 - self.discount_rate()) in shop/cart.py; run the whole suite and select its output."),
            Work("edit", "edit", json!({"path": "shop/cart.py", "old_string": TAX_OLD, "new_string": TAX_NEW})),
            Work("pass", "bash", bash(SUITE)),
            Select(&["pass"]),
            Return("tax() applies the discount; 14 tests pass.", "completed", &[]),
            Assign("Write README.md: what the shop does, how to run the CLI, and that a discount code lowers the taxable amount before tax. Run the CLI with WELCOME10 on items.csv and include its output; select that run."),
            Work("cli", "read", read("shop/cli.py")),
            Work("example", "bash", bash("python3 -m shop.cli CA WELCOME10 < items.csv 2>&1")),
            Work("readme", "write", json!({"path": "README.md", "content": "# shop\n\nCarts, regional sales tax and a command line that prints a cart's summary.\n\n```\npython3 -m shop.cli REGION [CODE] < items.csv\n```\n\nEach line of the input is `sku,name,price,quantity[,category]`. Groceries and\nprescriptions are not taxed.\n\n## Discounts and tax\n\nA discount code (`WELCOME10`, `SPRING15`, `STAFF30`) takes its share off every line,\nand tax is charged on the discounted amount of the taxable lines:\n\n```\n$ python3 -m shop.cli CA WELCOME10 < items.csv\n2 x Book @ 20.00\n1 x Bread @ 4.00\nsubtotal 44.00\ndiscount WELCOME10 -10%\ntax 2.61\ntotal 42.21\n```\n"})),
            Select(&["example"]),
            Return("README.md documents the CLI and the discount-before-tax rule, with the selected run.", "completed", &[]),
            Close("Fixed, tested, and documented with a real run."),
            Answer("Fixed the discount bug (tax is now on the discounted amount; 14 tests pass) and wrote README.md explaining how discounts and tax combine."),
        ],
    }
}
