//! The flow descriptor list of Resv, ResvErr, ResvTear and ResvConf (RFC 2205 §3.1.4, with the
//! LABEL and RECORD_ROUTE RFC 3209 §3.2.1 binds to each FILTER_SPEC), from its objects in wire
//! order.

use super::{FilterTe, FlowDescriptor};
use crate::few::Few;
use crate::wire::ParseErrorKind;
use crate::wire::intserv::FlowSpec;
use crate::wire::objects::{FilterSpec, Style, StyleKind, class};
use crate::wire::te::{self, GeneralizedLabel, Label, RecordRoute};
use smallvec::SmallVec;

/// A FLOWSPEC or a FILTER_SPEC with what is bound to it, in wire order.
pub(super) enum FlowObject {
    Flowspec(FlowSpec),
    Filter(FilterSpec, FilterTe),
}

/// A message's flow objects as collected: inline for the common one FLOWSPEC and one
/// FILTER_SPEC, so parsing such a Resv does not allocate for them.
pub(super) type FlowObjects = SmallVec<[FlowObject; 2]>;

/// How a message type treats the FLOWSPECs of its flow descriptor list.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum FlowRules {
    /// Resv, ResvConf: every descriptor has a FLOWSPEC (FF may elide repeats).
    Required,
    /// ResvErr: as `Required`, but the whole (error) flow descriptor may be absent.
    Optional,
    /// ResvTear: FLOWSPECs may be omitted, and then are `None`.
    Tear,
}

/// What a LABEL or RECORD_ROUTE binds to: the FILTER_SPEC directly before it, with only LABEL
/// and RECORD_ROUTE objects between (RFC 3209 §4.1: "The label for a sender MUST immediately
/// follow the FILTER_SPEC for that sender").
fn bound_to_last(objects: &mut [FlowObject], class: u8) -> Result<&mut FilterTe, ParseErrorKind> {
    match objects.last_mut() {
        Some(FlowObject::Filter(_, te)) => Ok(te),
        _ => Err(ParseErrorKind::BadFlowDescriptor { class }),
    }
}

/// Bind a LABEL or Generalized LABEL to the FILTER_SPEC before it; a second label there is an
/// error (§3.2.1: "No more than one LABEL and/or RECORD_ROUTE may follow each FILTER_SPEC").
pub(super) fn bind_label(
    objects: &mut [FlowObject],
    ctype: u8,
    body: &[u8],
) -> Result<(), ParseErrorKind> {
    // RFC 3473 §2.3: C-Type 2 is the Generalized LABEL; §2.3.1: a LABEL and a Generalized
    // LABEL together are malformed, as two LABELs are.
    let (label, generalized) = if ctype == te::ctype::GENERALIZED_LABEL {
        (None, Some(GeneralizedLabel::parse(ctype, body)?))
    } else {
        (Some(Label::parse(ctype, body)?), None)
    };
    let te = bound_to_last(objects, te::class::LABEL)?;
    if te.label.is_some() || te.generalized_label.is_some() {
        return Err(ParseErrorKind::BadFlowDescriptor {
            class: te::class::LABEL,
        });
    }
    te.label = label;
    te.generalized_label = generalized;
    Ok(())
}

/// Bind a RECORD_ROUTE to the FILTER_SPEC before it; of several, the first counts and the others
/// are dropped unread (RFC 3209 §4.4: "only the first RRO is meaningful. Subsequent RROs SHOULD
/// be ignored").
pub(super) fn bind_record_route(
    objects: &mut [FlowObject],
    ctype: u8,
    body: &[u8],
) -> Result<(), ParseErrorKind> {
    let te = bound_to_last(objects, te::class::RECORD_ROUTE)?;
    if te.record_route.is_none() {
        te.record_route = Some(RecordRoute::parse(ctype, body)?);
    }
    Ok(())
}

/// The `te` of a flow descriptor in its canonical form: empty when no filter spec has any.
fn canonical(te: Vec<FilterTe>) -> Vec<FilterTe> {
    if te.iter().all(FilterTe::is_empty) {
        Vec::new()
    } else {
        te
    }
}

/// Build the flow descriptor list from the FLOWSPEC and FILTER_SPEC objects in wire order,
/// following the style's grammar (§3.1.4).
pub(super) fn flow_descriptors(
    style: Style,
    objects: FlowObjects,
    rules: FlowRules,
) -> Result<Few<FlowDescriptor>, ParseErrorKind> {
    let bad = |class| ParseErrorKind::BadFlowDescriptor { class };
    let missing = |class| ParseErrorKind::MissingObject { class };
    match style.kind {
        // <WF flow descriptor> ::= <FLOWSPEC>
        StyleKind::Wf => {
            let mut flowspec = None;
            for o in objects {
                match o {
                    FlowObject::Filter(..) => return Err(bad(class::FILTER_SPEC)),
                    FlowObject::Flowspec(_) if flowspec.is_some() => {
                        return Err(bad(class::FLOWSPEC));
                    }
                    FlowObject::Flowspec(f) => flowspec = Some(f),
                }
            }
            match (flowspec, rules) {
                (None, FlowRules::Required) => Err(missing(class::FLOWSPEC)),
                (None, FlowRules::Optional) => Ok(Few::default()),
                (flowspec, _) => Ok(Few::One(FlowDescriptor::new(flowspec, Few::default()))),
            }
        }
        // <FF flow descriptor list> ::= <FLOWSPEC> <FILTER_SPEC>
        //                             | <FF flow descriptor list> <FF flow descriptor>
        // <FF flow descriptor> ::= [ <FLOWSPEC> ] <FILTER_SPEC>
        // RFC 3209 §3.2.1 adds <LABEL> [ <RECORD_ROUTE> ] after each <FILTER_SPEC>.
        StyleKind::Ff => {
            // Inline while there is one descriptor, as `Few` keeps it.
            let mut flows: SmallVec<[FlowDescriptor; 1]> = SmallVec::new();
            let mut pending: Option<FlowSpec> = None;
            let mut previous: Option<FlowSpec> = None;
            for o in objects {
                match o {
                    FlowObject::Flowspec(_) if pending.is_some() => {
                        return Err(bad(class::FLOWSPEC));
                    }
                    FlowObject::Flowspec(f) => pending = Some(f),
                    FlowObject::Filter(filter, te) => {
                        let flowspec = match (pending.take(), rules) {
                            (Some(f), _) => Some(f),
                            (None, FlowRules::Tear) => None,
                            (None, _) => Some(previous.ok_or(missing(class::FLOWSPEC))?),
                        };
                        previous = flowspec.or(previous);
                        flows.push(FlowDescriptor {
                            flowspec,
                            filters: Few::One(filter),
                            // `canonical` of the one filter's, without allocating for none.
                            te: if te.is_empty() { Vec::new() } else { vec![te] },
                        });
                    }
                }
            }
            if pending.is_some() {
                return Err(bad(class::FLOWSPEC));
            }
            if flows.is_empty() && rules != FlowRules::Optional {
                return Err(missing(class::FILTER_SPEC));
            }
            Ok(flows.into_iter().collect())
        }
        // <SE flow descriptor> ::= <FLOWSPEC> <filter spec list>
        // RFC 3209 §3.2.1: <SE filter spec> ::= <FILTER_SPEC> <LABEL> [ <RECORD_ROUTE> ]
        StyleKind::Se => {
            if objects.is_empty() && rules == FlowRules::Optional {
                return Ok(Few::default());
            }
            let mut flowspec = None;
            let mut filters: SmallVec<[FilterSpec; 1]> = SmallVec::new();
            let mut te = Vec::with_capacity(objects.len());
            for o in objects {
                match o {
                    FlowObject::Flowspec(_) if flowspec.is_some() || !filters.is_empty() => {
                        return Err(bad(class::FLOWSPEC));
                    }
                    FlowObject::Flowspec(f) => flowspec = Some(f),
                    FlowObject::Filter(f, t) => {
                        filters.push(f);
                        te.push(t);
                    }
                }
            }
            if flowspec.is_none() && rules != FlowRules::Tear {
                return Err(missing(class::FLOWSPEC));
            }
            if filters.is_empty() {
                return Err(missing(class::FILTER_SPEC));
            }
            Ok(Few::One(FlowDescriptor {
                flowspec,
                filters: filters.into_iter().collect(),
                te: canonical(te),
            }))
        }
        // A ResvErr reporting "Unknown reservation style" names the style it could not
        // understand, with no flow descriptor (RFC 2205 §3.1.8: the descriptor is optional).
        StyleKind::Other(_) if objects.is_empty() && rules == FlowRules::Optional => {
            Ok(Few::default())
        }
        StyleKind::Other(_) => Err(ParseErrorKind::UnknownStyle { style }),
    }
}
