//! Operator-defined cost expressions: parsed and type-checked once at load time into a small
//! stack bytecode, then evaluated per candidate with no allocation.
//!
//! ```text
//! expr  := or
//! or    := and (("or" | "||") and)*
//! and   := not (("and" | "&&") not)*
//! not   := ("not" | "!") not | cmp
//! cmp   := sum (("<" | "<=" | ">" | ">=" | "==" | "!=") sum)?
//! sum   := prod (("+" | "-") prod)*
//! prod  := unary (("*" | "/" | "%") unary)*
//! unary := "-" unary | pow
//! pow   := atom ("^" unary)?
//! atom  := NUMBER | "true" | "false" | VARIABLE | FUNCTION "(" expr ("," expr)* ")" | "(" expr ")"
//! ```
//!
//! Variables are the path metrics ([`Var`]); functions are `min`, `max` (one or more numbers),
//! `abs`, `sqrt`, `ln`, `log10`, `clamp(x, lo, hi)` and `if(condition, then, else)`. Numbers and
//! booleans are distinct types; the whole expression must be a number. Every error names the
//! 1-based column where the problem starts.

use super::PathMetrics;
use thiserror::Error;

/// Longest expression accepted, in bytes.
pub const MAX_EXPRESSION_LEN: usize = 4096;
/// Deepest nesting accepted (parentheses, operators and function calls).
const MAX_DEPTH: usize = 48;
/// Evaluation stack size; the compiler refuses expressions that would need more.
const STACK: usize = 64;

/// A path metric an expression can read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Var {
    /// Smallest bandwidth along the internal path, Mbit/s (infinite for a zero-hop path).
    Bandwidth,
    /// Sum of latencies along the internal path, ms.
    Latency,
    /// Internal hops.
    Hops,
    /// Internal hops plus AS distance.
    TotalHops,
    /// Sum of link weights along the internal path.
    Weight,
    /// AS number of the destination (the oracle's own for internal destinations).
    AsNumber,
    /// AS hops beyond the exit router (0 inside the AS).
    AsDistance,
    /// Largest congestion along the internal path (fraction of capacity).
    Congestion,
    /// Boolean: the destination is outside the AS.
    External,
    /// Boolean: the destination is inside the AS.
    Internal,
}

const VARS: &[(&str, Var)] = &[
    ("bandwidth", Var::Bandwidth),
    ("latency", Var::Latency),
    ("hops", Var::Hops),
    ("total_hops", Var::TotalHops),
    ("weight", Var::Weight),
    ("as_number", Var::AsNumber),
    ("as_distance", Var::AsDistance),
    ("congestion", Var::Congestion),
    ("external", Var::External),
    ("internal", Var::Internal),
];

impl Var {
    fn is_bool(self) -> bool {
        matches!(self, Var::External | Var::Internal)
    }

    fn read(self, m: &PathMetrics) -> f64 {
        match self {
            Var::Bandwidth => m.bandwidth,
            Var::Latency => m.latency,
            Var::Hops => f64::from(m.hops),
            Var::TotalHops => f64::from(m.hops) + f64::from(m.as_distance),
            Var::Weight => m.weight as f64,
            Var::AsNumber => f64::from(m.as_number),
            Var::AsDistance => f64::from(m.as_distance),
            Var::Congestion => m.congestion,
            Var::External => f64::from(u8::from(m.external)),
            Var::Internal => f64::from(u8::from(!m.external)),
        }
    }
}

/// Why an expression was refused, and where.
#[derive(Clone, Debug, PartialEq, Error)]
#[error("cost expression, column {column}: {kind}")]
pub struct ExprError {
    /// 1-based column (in characters) where the problem starts.
    pub column: usize,
    /// What is wrong.
    pub kind: ExprErrorKind,
}

/// What is wrong with an expression.
#[derive(Clone, Debug, PartialEq, Error)]
pub enum ExprErrorKind {
    /// The expression is empty.
    #[error("the expression is empty")]
    Empty,
    /// Longer than [`MAX_EXPRESSION_LEN`].
    #[error("the expression is longer than {MAX_EXPRESSION_LEN} bytes")]
    TooLong,
    /// A character that starts no token.
    #[error("unexpected character `{0}`")]
    BadChar(char),
    /// A malformed or non-finite number.
    #[error("`{0}` is not a finite number")]
    BadNumber(String),
    /// A name that is neither a variable nor a function.
    #[error(
        "unknown name `{0}` (variables: bandwidth, latency, hops, total_hops, weight, as_number, as_distance, congestion, external, internal; functions: min, max, abs, sqrt, ln, log10, clamp, if)"
    )]
    UnknownName(String),
    /// A token where something else was needed.
    #[error("expected {expected}, found {found}")]
    Unexpected {
        /// What the parser needed.
        expected: &'static str,
        /// What it found.
        found: String,
    },
    /// An operand or argument of the wrong type.
    #[error("{what} needs {expected}, found {found}")]
    Type {
        /// The operator or function.
        what: String,
        /// The type it needs.
        expected: &'static str,
        /// The type it got.
        found: &'static str,
    },
    /// A function called with the wrong number of arguments.
    #[error("{name} takes {expected} argument(s), found {found}")]
    Arity {
        /// The function.
        name: &'static str,
        /// What it takes.
        expected: &'static str,
        /// How many it got.
        found: usize,
    },
    /// Nested deeper than the evaluator allows.
    #[error("the expression is nested too deeply")]
    TooDeep,
    /// The whole expression is a boolean, not a cost.
    #[error("the expression is a boolean; a cost must be a number")]
    NotANumber,
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Op {
    Const(f64),
    Var(Var),
    Neg,
    Add,
    Sub,
    Mul,
    Div,
    Rem,
    Pow,
    Lt,
    Le,
    Gt,
    Ge,
    Eq,
    Ne,
    And,
    Or,
    Not,
    Min,
    Max,
    Abs,
    Sqrt,
    Ln,
    Log10,
    Clamp,
    Select,
}

/// A compiled cost expression.
#[derive(Clone, Debug, PartialEq)]
pub struct CostExpr {
    source: String,
    ops: Vec<Op>,
}

impl CostExpr {
    /// Parse, type-check and compile `source`.
    pub fn compile(source: &str) -> Result<CostExpr, ExprError> {
        if source.len() > MAX_EXPRESSION_LEN {
            return Err(ExprError {
                column: 1,
                kind: ExprErrorKind::TooLong,
            });
        }
        let tokens = lex(source)?;
        let mut p = Parser {
            tokens: &tokens,
            pos: 0,
            ops: Vec::new(),
            depth: 0,
            end_column: source.chars().count() + 1,
        };
        if tokens.is_empty() {
            return Err(p.err_at(1, ExprErrorKind::Empty));
        }
        let ty = p.or()?;
        if let Some(t) = tokens.get(p.pos) {
            return Err(p.err_at(
                t.column,
                ExprErrorKind::Unexpected {
                    expected: "an operator or the end",
                    found: t.tok.describe(),
                },
            ));
        }
        if ty != Ty::Num {
            return Err(p.err_at(1, ExprErrorKind::NotANumber));
        }
        let mut depth = 0usize;
        let mut max = 0usize;
        for op in &p.ops {
            depth = (depth + 1).saturating_sub(op.pops());
            max = max.max(depth);
        }
        if max > STACK {
            return Err(p.err_at(1, ExprErrorKind::TooDeep));
        }
        Ok(CostExpr {
            source: source.to_owned(),
            ops: p.ops,
        })
    }

    /// The source text.
    pub fn source(&self) -> &str {
        &self.source
    }

    /// Whether the expression reads `var`.
    pub fn reads(&self, var: Var) -> bool {
        self.ops.contains(&Op::Var(var))
    }

    /// Evaluate against one path's metrics. Never panics; division by zero and the like give
    /// infinities or NaN, which ranking orders after every finite cost.
    pub fn eval(&self, m: &PathMetrics) -> f64 {
        let mut stack = [0f64; STACK];
        let mut sp = 0usize;
        for op in &self.ops {
            let n = op.pops();
            // The compiler checked depth; `get` keeps the no-panic promise anyway.
            if sp < n || sp - n >= STACK {
                return f64::NAN;
            }
            let base = sp - n;
            let a = stack[base];
            let b = stack.get(base + 1).copied().unwrap_or(0.0);
            let c = stack.get(base + 2).copied().unwrap_or(0.0);
            let truth = |x: bool| f64::from(u8::from(x));
            stack[base] = match *op {
                Op::Const(v) => v,
                Op::Var(v) => v.read(m),
                Op::Neg => -a,
                Op::Add => a + b,
                Op::Sub => a - b,
                Op::Mul => a * b,
                Op::Div => a / b,
                Op::Rem => a % b,
                Op::Pow => a.powf(b),
                Op::Lt => truth(a < b),
                Op::Le => truth(a <= b),
                Op::Gt => truth(a > b),
                Op::Ge => truth(a >= b),
                Op::Eq => truth(a == b),
                Op::Ne => truth(a != b),
                Op::And => truth(a != 0.0 && b != 0.0),
                Op::Or => truth(a != 0.0 || b != 0.0),
                Op::Not => truth(a == 0.0),
                Op::Min => a.min(b),
                Op::Max => a.max(b),
                Op::Abs => a.abs(),
                Op::Sqrt => a.sqrt(),
                Op::Ln => a.ln(),
                Op::Log10 => a.log10(),
                Op::Clamp => a.max(b).min(c),
                Op::Select => {
                    if a != 0.0 {
                        b
                    } else {
                        c
                    }
                }
            };
            sp = base + 1;
        }
        if sp == 1 { stack[0] } else { f64::NAN }
    }
}

impl Op {
    /// Operands consumed (the result is always one value).
    fn pops(self) -> usize {
        match self {
            Op::Const(_) | Op::Var(_) => 0,
            Op::Neg | Op::Not | Op::Abs | Op::Sqrt | Op::Ln | Op::Log10 => 1,
            Op::Clamp | Op::Select => 3,
            _ => 2,
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
enum Tok {
    Num(f64),
    Ident(String),
    Sym(&'static str),
}

impl Tok {
    fn describe(&self) -> String {
        match self {
            Tok::Num(v) => format!("number {v}"),
            Tok::Ident(s) => format!("`{s}`"),
            Tok::Sym(s) => format!("`{s}`"),
        }
    }
}

#[derive(Debug)]
struct Token {
    tok: Tok,
    column: usize,
}

const SYMBOLS: &[&str] = &[
    "<=", ">=", "==", "!=", "&&", "||", "<", ">", "!", "+", "-", "*", "/", "%", "^", "(", ")", ",",
];

fn lex(src: &str) -> Result<Vec<Token>, ExprError> {
    let chars: Vec<char> = src.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let column = i + 1;
        if c.is_whitespace() {
            i += 1;
        } else if c.is_ascii_digit()
            || (c == '.' && chars.get(i + 1).is_some_and(char::is_ascii_digit))
        {
            let start = i;
            while i < chars.len() && (chars[i].is_ascii_alphanumeric() || chars[i] == '.') {
                // An exponent sign belongs to the number: 1e-3.
                if matches!(chars[i], 'e' | 'E') && matches!(chars.get(i + 1), Some('+' | '-')) {
                    i += 1;
                }
                i += 1;
            }
            let text: String = chars[start..i].iter().collect();
            match text.parse::<f64>() {
                Ok(v) if v.is_finite() => out.push(Token {
                    tok: Tok::Num(v),
                    column,
                }),
                _ => {
                    return Err(ExprError {
                        column,
                        kind: ExprErrorKind::BadNumber(text),
                    });
                }
            }
        } else if c.is_ascii_alphabetic() || c == '_' {
            let start = i;
            while i < chars.len() && (chars[i].is_ascii_alphanumeric() || chars[i] == '_') {
                i += 1;
            }
            out.push(Token {
                tok: Tok::Ident(chars[start..i].iter().collect()),
                column,
            });
        } else {
            let sym = SYMBOLS.iter().find(|s| {
                s.chars()
                    .enumerate()
                    .all(|(k, sc)| chars.get(i + k) == Some(&sc))
            });
            match sym {
                Some(s) => {
                    i += s.len();
                    out.push(Token {
                        tok: Tok::Sym(s),
                        column,
                    });
                }
                None => {
                    return Err(ExprError {
                        column,
                        kind: ExprErrorKind::BadChar(c),
                    });
                }
            }
        }
    }
    Ok(out)
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Ty {
    Num,
    Bool,
}

impl Ty {
    fn name(self) -> &'static str {
        match self {
            Ty::Num => "a number",
            Ty::Bool => "a boolean",
        }
    }
}

struct Parser<'t> {
    tokens: &'t [Token],
    pos: usize,
    ops: Vec<Op>,
    depth: usize,
    end_column: usize,
}

type PResult = Result<Ty, ExprError>;

impl Parser<'_> {
    fn err_at(&self, column: usize, kind: ExprErrorKind) -> ExprError {
        ExprError { column, kind }
    }

    fn column(&self) -> usize {
        self.tokens
            .get(self.pos)
            .map_or(self.end_column, |t| t.column)
    }

    fn peek_sym(&self, options: &[&str]) -> Option<&'static str> {
        match self.tokens.get(self.pos).map(|t| &t.tok) {
            Some(Tok::Sym(s)) if options.contains(s) => Some(s),
            Some(Tok::Ident(w)) => {
                let word: &'static str = match w.as_str() {
                    "and" => "&&",
                    "or" => "||",
                    "not" => "!",
                    _ => return None,
                };
                options.contains(&word).then_some(word)
            }
            _ => None,
        }
    }

    fn expect_sym(&mut self, sym: &'static str, expected: &'static str) -> Result<(), ExprError> {
        if self.peek_sym(&[sym]).is_some() {
            self.pos += 1;
            return Ok(());
        }
        Err(self.unexpected(expected))
    }

    fn unexpected(&self, expected: &'static str) -> ExprError {
        let found = self
            .tokens
            .get(self.pos)
            .map_or_else(|| "the end".to_owned(), |t| t.tok.describe());
        self.err_at(self.column(), ExprErrorKind::Unexpected { expected, found })
    }

    fn need(&self, column: usize, what: &str, want: Ty, got: Ty) -> Result<(), ExprError> {
        if want == got {
            return Ok(());
        }
        Err(self.err_at(
            column,
            ExprErrorKind::Type {
                what: what.to_owned(),
                expected: want.name(),
                found: got.name(),
            },
        ))
    }

    fn enter(&mut self) -> Result<(), ExprError> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(self.err_at(self.column(), ExprErrorKind::TooDeep));
        }
        Ok(())
    }

    /// A left-associative chain of binary operators over `operand` of one type.
    fn chain(
        &mut self,
        syms: &[&str],
        ty: Ty,
        operand: fn(&mut Self) -> PResult,
        op_of: fn(&str) -> Op,
    ) -> PResult {
        let col = self.column();
        let first = operand(self)?;
        let Some(mut sym) = self.peek_sym(syms) else {
            return Ok(first);
        };
        self.need(col, &format!("`{sym}`"), ty, first)?;
        loop {
            self.pos += 1;
            let col = self.column();
            let rhs = operand(self)?;
            self.need(col, &format!("`{sym}`"), ty, rhs)?;
            self.ops.push(op_of(sym));
            match self.peek_sym(syms) {
                Some(s) => sym = s,
                None => return Ok(ty),
            }
        }
    }

    fn or(&mut self) -> PResult {
        self.enter()?;
        let r = self.chain(&["||"], Ty::Bool, Self::and, |_| Op::Or);
        self.depth -= 1;
        r
    }

    fn and(&mut self) -> PResult {
        self.chain(&["&&"], Ty::Bool, Self::not, |_| Op::And)
    }

    fn not(&mut self) -> PResult {
        if self.peek_sym(&["!"]).is_some() {
            self.enter()?;
            self.pos += 1;
            let col = self.column();
            let t = self.not()?;
            self.need(col, "`not`", Ty::Bool, t)?;
            self.ops.push(Op::Not);
            self.depth -= 1;
            return Ok(Ty::Bool);
        }
        self.cmp()
    }

    fn cmp(&mut self) -> PResult {
        let col = self.column();
        let lhs = self.sum()?;
        let Some(sym) = self.peek_sym(&["<", "<=", ">", ">=", "==", "!="]) else {
            return Ok(lhs);
        };
        self.pos += 1;
        let rcol = self.column();
        let rhs = self.sum()?;
        let what = format!("`{sym}`");
        if matches!(sym, "==" | "!=") {
            // Equality compares like with like.
            self.need(rcol, &what, lhs, rhs)?;
        } else {
            self.need(col, &what, Ty::Num, lhs)?;
            self.need(rcol, &what, Ty::Num, rhs)?;
        }
        self.ops.push(match sym {
            "<" => Op::Lt,
            "<=" => Op::Le,
            ">" => Op::Gt,
            ">=" => Op::Ge,
            "==" => Op::Eq,
            _ => Op::Ne,
        });
        Ok(Ty::Bool)
    }

    fn sum(&mut self) -> PResult {
        self.chain(&["+", "-"], Ty::Num, Self::prod, |s| {
            if s == "+" { Op::Add } else { Op::Sub }
        })
    }

    fn prod(&mut self) -> PResult {
        self.chain(&["*", "/", "%"], Ty::Num, Self::unary, |s| match s {
            "*" => Op::Mul,
            "/" => Op::Div,
            _ => Op::Rem,
        })
    }

    fn unary(&mut self) -> PResult {
        if self.peek_sym(&["-"]).is_some() {
            self.enter()?;
            self.pos += 1;
            let col = self.column();
            let t = self.unary()?;
            self.need(col, "unary `-`", Ty::Num, t)?;
            self.ops.push(Op::Neg);
            self.depth -= 1;
            return Ok(Ty::Num);
        }
        self.pow()
    }

    fn pow(&mut self) -> PResult {
        let col = self.column();
        let base = self.atom()?;
        if self.peek_sym(&["^"]).is_none() {
            return Ok(base);
        }
        self.need(col, "`^`", Ty::Num, base)?;
        self.enter()?;
        self.pos += 1;
        let rcol = self.column();
        let exp = self.unary()?;
        self.need(rcol, "`^`", Ty::Num, exp)?;
        self.ops.push(Op::Pow);
        self.depth -= 1;
        Ok(Ty::Num)
    }

    fn atom(&mut self) -> PResult {
        let col = self.column();
        let Some(token) = self.tokens.get(self.pos) else {
            return Err(self.unexpected("a number, a variable, a function or `(`"));
        };
        match &token.tok {
            Tok::Num(v) => {
                self.pos += 1;
                self.ops.push(Op::Const(*v));
                Ok(Ty::Num)
            }
            Tok::Sym("(") => {
                self.pos += 1;
                let t = self.or()?;
                self.expect_sym(")", "`)`")?;
                Ok(t)
            }
            Tok::Ident(name) => {
                self.pos += 1;
                match name.as_str() {
                    "true" | "false" => {
                        self.ops
                            .push(Op::Const(f64::from(u8::from(name == "true"))));
                        return Ok(Ty::Bool);
                    }
                    _ => {}
                }
                if let Some((_, v)) = VARS.iter().find(|(n, _)| n == name) {
                    self.ops.push(Op::Var(*v));
                    return Ok(if v.is_bool() { Ty::Bool } else { Ty::Num });
                }
                let name = name.clone();
                self.call(&name, col)
            }
            _ => Err(self.unexpected("a number, a variable, a function or `(`")),
        }
    }

    fn call(&mut self, name: &str, col: usize) -> PResult {
        let (fname, arity): (&'static str, &'static str) = match name {
            "min" => ("min", "one or more"),
            "max" => ("max", "one or more"),
            "abs" => ("abs", "1"),
            "sqrt" => ("sqrt", "1"),
            "ln" => ("ln", "1"),
            "log10" => ("log10", "1"),
            "clamp" => ("clamp", "3"),
            "if" => ("if", "3"),
            _ => {
                return Err(self.err_at(col, ExprErrorKind::UnknownName(name.to_owned())));
            }
        };
        self.enter()?;
        self.expect_sym("(", "`(` after a function name")?;
        let mut args: Vec<(usize, Ty)> = Vec::new();
        loop {
            let acol = self.column();
            let t = self.or()?;
            args.push((acol, t));
            if self.peek_sym(&[","]).is_some() {
                self.pos += 1;
                continue;
            }
            self.expect_sym(")", "`,` or `)`")?;
            break;
        }
        let arity_ok = match arity {
            "one or more" => !args.is_empty(),
            "1" => args.len() == 1,
            _ => args.len() == 3,
        };
        if !arity_ok {
            return Err(self.err_at(
                col,
                ExprErrorKind::Arity {
                    name: fname,
                    expected: arity,
                    found: args.len(),
                },
            ));
        }
        let what = format!("`{fname}`");
        let result = if fname == "if" {
            self.need(args[0].0, &what, Ty::Bool, args[0].1)?;
            self.need(args[2].0, &what, args[1].1, args[2].1)?;
            self.ops.push(Op::Select);
            args[1].1
        } else {
            for &(acol, t) in &args {
                self.need(acol, &what, Ty::Num, t)?;
            }
            match fname {
                "min" | "max" => {
                    let op = if fname == "min" { Op::Min } else { Op::Max };
                    for _ in 1..args.len() {
                        self.ops.push(op);
                    }
                }
                "abs" => self.ops.push(Op::Abs),
                "sqrt" => self.ops.push(Op::Sqrt),
                "ln" => self.ops.push(Op::Ln),
                "log10" => self.ops.push(Op::Log10),
                _ => self.ops.push(Op::Clamp),
            }
            Ty::Num
        };
        self.depth -= 1;
        Ok(result)
    }
}
