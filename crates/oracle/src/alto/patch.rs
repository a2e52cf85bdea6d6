//! JSON merge patches (RFC 7396, which RFC 8895 §3.1 adopts for update streams): [`diff`]
//! computes the patch that turns one ALTO map into another, [`apply`] is the RFC's MergePatch
//! procedure (§2). RFC 7396 is not among shared/rfcs; its predecessor RFC 7386 is, and its §2
//! pseudocode lost its indentation (the erratum RFC 7396 was published to fix): the loop over
//! the patch's members runs whether or not the target was an object, as RFC 8895 §3.1.1
//! describes the algorithm and as the code below does.
//!
//! A merge patch cannot set a member to `null` (null deletes it), so a diff is exact only for
//! documents without nulls — true of every ALTO map this server sends (RFC 8895 §6.3 asks a
//! server to mind this). Arrays are replaced whole (RFC 8895 §3.1.1).

use serde_json::{Map, Value};

/// The merge patch that turns `old` into `new`, or `None` when they are equal.
pub fn diff(old: &Value, new: &Value) -> Option<Value> {
    if old == new {
        return None;
    }
    match (old, new) {
        (Value::Object(o), Value::Object(n)) => {
            let mut patch = Map::new();
            for (k, ov) in o {
                match n.get(k) {
                    None => {
                        patch.insert(k.clone(), Value::Null);
                    }
                    Some(nv) => {
                        if let Some(p) = diff(ov, nv) {
                            patch.insert(k.clone(), p);
                        }
                    }
                }
            }
            for (k, nv) in n {
                if !o.contains_key(k) {
                    patch.insert(k.clone(), nv.clone());
                }
            }
            Some(Value::Object(patch))
        }
        // Anything else is replaced whole.
        _ => Some(new.clone()),
    }
}

/// Apply `patch` to `target` (RFC 7396 §2):
///
/// ```text
/// define MergePatch(Target, Patch):
///   if Patch is an Object:
///     if Target is not an Object:
///       Target = {} # Ignore the contents and set it to an empty Object
///     for each Name/Value pair in Patch:
///       if Value is null:
///         if Name exists in Target:
///           remove the Name/Value pair from Target
///       else:
///         Target[Name] = MergePatch(Target[Name], Value)
///     return Target
///   else:
///     return Patch
/// ```
pub fn apply(target: &mut Value, patch: &Value) {
    let Value::Object(p) = patch else {
        *target = patch.clone();
        return;
    };
    if !target.is_object() {
        *target = Value::Object(Map::new());
    }
    if let Value::Object(t) = target {
        for (k, v) in p {
            if v.is_null() {
                t.remove(k);
            } else {
                apply(t.entry(k.clone()).or_insert(Value::Null), v);
            }
        }
    }
}
