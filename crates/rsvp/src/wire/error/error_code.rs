//! Error codes of the ERROR_SPEC object (RFC 2205 Appendix B; RFC 3209 §4.5 for 24 and 25,
//! with RFC 3473 §13.1's GMPLS values) and their globally defined sub-codes.

/// 00: Confirmation (only in the ERROR_SPEC of a ResvConf; value 0).
pub const CONFIRMATION: u8 = 0;
/// 01: Admission Control failure; value sub-codes in [`admission`].
pub const ADMISSION_CONTROL_FAILURE: u8 = 1;
/// 02: Policy Control failure (PathErr or ResvErr).
pub const POLICY_CONTROL_FAILURE: u8 = 2;
/// 03: No path information for this Resv message.
pub const NO_PATH_INFORMATION: u8 = 3;
/// 04: No sender information for this Resv message.
pub const NO_SENDER_INFORMATION: u8 = 4;
/// 05: Conflicting reservation style.
pub const CONFLICTING_RESERVATION_STYLE: u8 = 5;
/// 06: Unknown reservation style.
pub const UNKNOWN_RESERVATION_STYLE: u8 = 6;
/// 07: Conflicting destination ports (PathErr or ResvErr).
pub const CONFLICTING_DEST_PORTS: u8 = 7;
/// 08: Conflicting sender ports (PathErr).
pub const CONFLICTING_SENDER_PORTS: u8 = 8;
/// 12: Service preempted.
pub const SERVICE_PREEMPTED: u8 = 12;
/// 13: Unknown object class; value = (Class-Num << 8) | C-Type (PathErr or ResvErr).
pub const UNKNOWN_OBJECT_CLASS: u8 = 13;
/// 14: Unknown object C-Type; value = (Class-Num << 8) | C-Type (PathErr or ResvErr).
pub const UNKNOWN_OBJECT_CTYPE: u8 = 14;
/// 20: Reserved for API error.
pub const API_ERROR: u8 = 20;
/// 21: Traffic Control error; value sub-codes in [`traffic_control`].
pub const TRAFFIC_CONTROL_ERROR: u8 = 21;
/// 22: Traffic Control system error.
pub const TRAFFIC_CONTROL_SYSTEM_ERROR: u8 = 22;
/// 23: RSVP system error.
pub const RSVP_SYSTEM_ERROR: u8 = 23;
/// 24: Routing Problem (RFC 3209 §4.5; PathErr); value sub-codes in [`routing`].
pub const ROUTING_PROBLEM: u8 = 24;
/// 25: Notify (RFC 3209 §4.5): an event to report rather than a failure; value sub-codes
/// in [`notify`].
pub const NOTIFY: u8 = 25;

/// Globally defined sub-codes (ssur = 0000) of error code 01, Admission Control failure.
pub mod admission {
    /// Delay bound cannot be met.
    pub const DELAY_BOUND: u16 = 1;
    /// Requested bandwidth unavailable.
    pub const BANDWIDTH_UNAVAILABLE: u16 = 2;
    /// MTU in flowspec larger than interface MTU.
    pub const MTU_TOO_BIG: u16 = 3;
}

/// Sub-codes of error code 24, Routing Problem (RFC 3209 §4.5; 8–10 from §4.2.4 and
/// §4.2.5, on LABEL_REQUEST handling; 11, 12, 14 and 15 from GMPLS, RFC 3473 §13.1, which also
/// puts 6, 9 and 10 to use for Generalized labels, §2.1.1 and §2.3.1).
pub mod routing {
    /// Bad EXPLICIT_ROUTE object (§4.3.4.1: also a Path whose ERO has no subobject; §4.3.6:
    /// a subobject the node does not recognize).
    pub const BAD_EXPLICIT_ROUTE_OBJECT: u16 = 1;
    /// Bad strict node.
    pub const BAD_STRICT_NODE: u16 = 2;
    /// Bad loose node.
    pub const BAD_LOOSE_NODE: u16 = 3;
    /// Bad initial subobject: this node is not part of the ERO's first abstract node.
    pub const BAD_INITIAL_SUBOBJECT: u16 = 4;
    /// No route available toward destination.
    pub const NO_ROUTE_AVAILABLE: u16 = 5;
    /// Unacceptable label value.
    pub const UNACCEPTABLE_LABEL_VALUE: u16 = 6;
    /// RRO indicated routing loops.
    pub const RRO_INDICATED_ROUTING_LOOPS: u16 = 7;
    /// MPLS being negotiated, but a non-RSVP-capable router stands in the path.
    pub const NON_RSVP_CAPABLE_ROUTER: u16 = 8;
    /// MPLS label allocation failure.
    pub const LABEL_ALLOCATION_FAILURE: u16 = 9;
    /// Unsupported L3PID; for a Generalized LABEL_REQUEST, a G-PID the egress cannot carry
    /// (RFC 3473 §2.1.1).
    pub const UNSUPPORTED_L3PID: u16 = 10;
    /// Label Set (RFC 3473 §13.1): no label of a LABEL_SET is acceptable (§2.6.1).
    pub const LABEL_SET: u16 = 11;
    /// Switching Type (RFC 3473 §2.1.1, §13.1): the Generalized LABEL_REQUEST's switching
    /// type is not supported on the incoming interface.
    pub const SWITCHING_TYPE: u16 = 12;
    /// Unsupported Encoding (RFC 3473 §2.1.1, §13.1): the LSP encoding type cannot be
    /// supported. (13 is a dropped duplicate.)
    pub const UNSUPPORTED_ENCODING: u16 = 14;
    /// Unsupported Link Protection (RFC 3473 §13.1).
    pub const UNSUPPORTED_LINK_PROTECTION: u16 = 15;

    /// A Routing Problem value in RFC 3209's words (§4.5), or RFC 3473's (§13.1).
    pub fn describe(value: u16) -> &'static str {
        match value {
            BAD_EXPLICIT_ROUTE_OBJECT => "Bad EXPLICIT_ROUTE object",
            BAD_STRICT_NODE => "Bad strict node",
            BAD_LOOSE_NODE => "Bad loose node",
            BAD_INITIAL_SUBOBJECT => "Bad initial subobject",
            NO_ROUTE_AVAILABLE => "No route available toward destination",
            UNACCEPTABLE_LABEL_VALUE => "Unacceptable label value",
            RRO_INDICATED_ROUTING_LOOPS => "RRO indicated routing loops",
            NON_RSVP_CAPABLE_ROUTER => {
                "MPLS being negotiated, but a non-RSVP-capable router stands in the path"
            }
            LABEL_ALLOCATION_FAILURE => "MPLS label allocation failure",
            UNSUPPORTED_L3PID => "Unsupported L3PID",
            LABEL_SET => "Label Set",
            SWITCHING_TYPE => "Switching Type",
            UNSUPPORTED_ENCODING => "Unsupported Encoding",
            UNSUPPORTED_LINK_PROTECTION => "Unsupported Link Protection",
            _ => "unknown routing problem",
        }
    }
}

/// Sub-codes of error code 25, Notify (RFC 3209 §4.5; 4 and 5 from RFC 3473 §13.1).
pub mod notify {
    /// RRO too large for MTU: the RECORD_ROUTE was dropped from the Path.
    pub const RRO_TOO_LARGE_FOR_MTU: u16 = 1;
    /// RRO Notification: the route recorded changed.
    pub const RRO_NOTIFICATION: u16 = 2;
    /// Tunnel locally repaired.
    pub const TUNNEL_LOCALLY_REPAIRED: u16 = 3;
    /// Control Channel Active State (RFC 3473 §13.1).
    pub const CONTROL_CHANNEL_ACTIVE_STATE: u16 = 4;
    /// Control Channel Degraded State (RFC 3473 §13.1).
    pub const CONTROL_CHANNEL_DEGRADED_STATE: u16 = 5;
}

/// Globally defined sub-codes (ssur = 0000) of error code 21, Traffic Control error.
pub mod traffic_control {
    /// Service conflict.
    pub const SERVICE_CONFLICT: u16 = 1;
    /// Service unsupported.
    pub const SERVICE_UNSUPPORTED: u16 = 2;
    /// Bad flowspec value.
    pub const BAD_FLOWSPEC: u16 = 3;
    /// Bad Tspec value.
    pub const BAD_TSPEC: u16 = 4;
    /// Bad Adspec value.
    pub const BAD_ADSPEC: u16 = 5;
}

/// Values of error code 20, "Reserved for API": RFC 2205 App. B gives it to "an API error code,
/// for an API error that was detected asynchronously and must be reported via an upcall", and
/// leaves the values to the implementation. These are pathwise's; they never go on the wire.
pub mod api {
    /// An LSP's head end had no label from downstream within the setup time
    /// (`Config::lsp_setup_timeout`) and gave the LSP up, to try again after a back-off.
    pub const LSP_SETUP_TIMED_OUT: u16 = 1;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gmpls_values_match_rfc_3473() {
        // RFC 3473 §13.1 "Error codes", and the RFC 3209 values §2.1.1 and §2.3.1 name.
        assert_eq!(
            [
                routing::LABEL_SET,
                routing::SWITCHING_TYPE,
                routing::UNSUPPORTED_ENCODING,
                routing::UNSUPPORTED_LINK_PROTECTION,
            ],
            [11, 12, 14, 15]
        );
        assert_eq!(
            [
                routing::UNACCEPTABLE_LABEL_VALUE,
                routing::LABEL_ALLOCATION_FAILURE,
                routing::UNSUPPORTED_L3PID
            ],
            [6, 9, 10]
        );
        assert_eq!(
            [
                notify::CONTROL_CHANNEL_ACTIVE_STATE,
                notify::CONTROL_CHANNEL_DEGRADED_STATE
            ],
            [4, 5]
        );
        assert_eq!((ROUTING_PROBLEM, NOTIFY), (24, 25));
        assert_eq!(routing::describe(14), "Unsupported Encoding");
        assert_eq!(routing::describe(13), "unknown routing problem");
    }
}
