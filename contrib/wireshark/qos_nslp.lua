-- qos_nslp.lua: Wireshark dissector for the QoS NSLP (RFC 5974) and its QSPEC template
-- (RFC 5975), as GIST carries them in NSLP-Data. It needs gist.lua (the GIST dissector, which
-- creates the "gist.nslpid" dissector table) loaded as well:
--
--     tshark -X lua_script:contrib/wireshark/gist.lua \
--            -X lua_script:contrib/wireshark/qos_nslp.lua -r capture.pcap -V
-- or
--     cp contrib/wireshark/gist.lua contrib/wireshark/qos_nslp.lua ~/.local/lib/wireshark/plugins/
--
-- Registered under NSLPIDs 1-32, the QoS NSLP's aggregation levels 0-31 (RFC 5974 §6.6; IANA
-- assigned the numbers 1-32). Loaded before gist.lua, it registers when the first capture is
-- opened instead.
--
-- Decodes, as pathwise's codec (crates/qos-nslp/src/wire/) reads them:
--   * the common header (§5.1.1): message type, the message-specific flags of RESERVE (TEAR,
--     REPLACE) and QUERY (RESERVE-INIT), the generic flags (SCOPING, PROXY, ACK-REQ, BREAK);
--   * every object (§5.1.3) with its A/B extensibility flags, type and length: RII, RSN,
--     REFRESH-PERIOD, BOUND-SESSION-ID, PACKET-CLASSIFIER, INFO-SPEC (error class, code and
--     its name, Error Source Identifier, Object Type / Object Value Info), SESSION-ID-LIST,
--     RSN-LIST, MSG-ID, BOUND-MSG-ID, QSPEC; unknown objects by their AB flags;
--   * the QSPEC (RFC 5975 §5): common header (version, I, QSPEC type, message sequence and
--     object combination), each QSPEC object (QoS Desired, QoS Available, QoS Reserved,
--     Minimum QoS) and each parameter with its M/E/N flags and fields (§5.2.1-§5.2.14);
--     unknown parameters as bytes; a Local QSPEC's encapsulated Initiator QSPEC (§4.1).
--
-- Every check the codec makes before it accepts a message is an expert item naming the
-- INFO-SPEC Protocol Error code a QNE would answer with: lengths are errors (Malformed), other
-- violations warnings, so a message carries a warning or an error exactly when
-- `Message::parse` rejects it. What the codec keeps (unknown objects with AB != 00, unknown
-- QSPEC parameters, unassigned values) is a note. The dissector never raises a Lua error:
-- every read is checked against the bytes of its object.
--
-- Lua 5.2 (Wireshark 4.0) has no bit operators: masks are applied by arithmetic.

local qos = Proto("qos_nslp", "QoS NSLP")

-- RFC 5974 §6.6: 32 NSLPIDs for aggregation levels 0-31; IANA: 1-32.
local FIRST_NSLPID, LAST_NSLPID = 1, 32

local function has(v, mask)
    return math.floor(v / mask) % 2 == 1
end

------------------------------------------------------------------------------------------------
-- Value strings (RFC 5974 §5.1, §6; RFC 5975 §5, §7)
------------------------------------------------------------------------------------------------

local RESERVE, QUERY, RESPONSE, NOTIFY = 1, 2, 3, 4
local msg_types = { [1] = "RESERVE", [2] = "QUERY", [3] = "RESPONSE", [4] = "NOTIFY" }

local RII, RSN, REFRESH_PERIOD, BOUND_SESSION_ID, PACKET_CLASSIFIER, INFO_SPEC =
    1, 2, 3, 4, 5, 6
local SESSION_ID_LIST, RSN_LIST, MSG_ID, BOUND_MSG_ID, QSPEC = 7, 8, 9, 10, 11
local obj_types = {
    [1] = "RII",
    [2] = "RSN",
    [3] = "REFRESH-PERIOD",
    [4] = "BOUND-SESSION-ID",
    [5] = "PACKET-CLASSIFIER",
    [6] = "INFO-SPEC",
    [7] = "SESSION-ID-LIST",
    [8] = "RSN-LIST",
    [9] = "MSG-ID",
    [10] = "BOUND-MSG-ID",
    [11] = "QSPEC",
}

-- §5.1.3: what a receiver that does not know the type does with the object.
local ab_names = {
    [0] = "Mandatory (AB=00): reject the message if unknown",
    [1] = "Ignore (AB=01): delete the object if unknown",
    [2] = "Forward (AB=10): forward unchanged if unknown",
    [3] = "Refresh (AB=11): store, forward and refresh if unknown",
}
local ab_short = { [1] = "dropped", [2] = "forwarded", [3] = "stored and forwarded" }

-- §5.1.3.4.
local binding_codes = {
    [1] = "Tunnel and end-to-end sessions",
    [2] = "Bidirectional sessions",
    [3] = "Aggregate sessions",
    [4] = "Dependent sessions",
    [5] = "Indicated session caused preemption",
}

-- §5.1.3.6, §6.4.
local error_classes = {
    [1] = "Informational",
    [2] = "Success",
    [3] = "Protocol Error",
    [4] = "Transient Failure",
    [5] = "Permanent Failure",
    [6] = "QoS Model Error",
    [7] = "Signaling Session Failure",
}

local error_codes = {
    [1] = {
        [1] = "Unknown BOUND-SESSION-ID",
        [2] = "Route Change",
        [3] = "Reduced refreshes not supported; full QSPEC required",
        [4] = "Congestion situation",
        [5] = "Unknown SESSION-ID in SESSION-ID-LIST",
        [6] = "Mismatching RSN in RSN-LIST",
    },
    [2] = {
        [1] = "Reservation successful",
        [2] = "Teardown successful",
        [3] = "Acknowledgement",
        [4] = "Refresh successful",
    },
    [3] = {
        [1] = "Illegal message type",
        [2] = "Wrong message length",
        [3] = "Bad flags value (generic flags)",
        [4] = "Bad flags value (message-specific flags)",
        [5] = "Mandatory object missing",
        [6] = "Illegal object present",
        [7] = "Unknown object present",
        [8] = "Wrong object length",
        [9] = "RESERVE received from wrong direction",
        [10] = "Unknown object field value",
        [11] = "Duplicate object present",
        [12] = "Malformed QSPEC",
        [13] = "Unknown MRI",
        [14] = "Erroneous value in the TLV object's value field",
        [15] = "Incompatible QSPEC",
    },
    [4] = {
        [1] = "No GIST reverse-path forwarding state",
        [2] = "No path state for RESERVE",
        [3] = "RII conflict",
        [4] = "Full QSPEC required",
        [5] = "Mismatch synchronization between end-to-end RESERVE and intra-domain RESERVE",
        [6] = "Reservation preempted",
        [7] = "Reservation failure",
        [8] = "Path truncated - Next peer dead",
    },
    [5] = {
        [1] = "Internal or system error",
        [2] = "Authorization failure",
    },
}

-- §5.1.3.6, §6.5.
local esi_types = {
    [0] = "None",
    [1] = "IPv4",
    [2] = "IPv6",
    [3] = "FQDN",
    [14] = "Experimental/Private Use",
    [15] = "Experimental/Private Use",
}

-- RFC 5975 §5.1.1, §7.
local qspec_types = { [0] = "Default", [1] = "Y.1541-QOSM", [2] = "RMD-QOSM" }
local msg_sequences = {
    [0] = "Sender-Initiated Reservations",
    [1] = "Receiver-Initiated Reservations",
    [2] = "Resource Queries",
}
-- §5.1.2.
local qspec_obj_types = {
    [0] = "QoS Desired",
    [1] = "QoS Available",
    [2] = "QoS Reserved",
    [3] = "Minimum QoS",
}
-- §5.2, §7.
local TMOD_1, TMOD_2, PATH_LATENCY, PATH_JITTER, PATH_PLR, PATH_PER, SLACK_TERM = 1, 2, 3, 4,
    5, 6, 7
local PREEMPTION, ADMISSION, RPH, EXCESS, PHB_CLASS, DSTE, Y1541 = 8, 9, 10, 11, 12, 13, 14
local param_names = {
    [1] = "TMOD-1",
    [2] = "TMOD-2",
    [3] = "Path Latency",
    [4] = "Path Jitter",
    [5] = "Path PLR",
    [6] = "Path PER",
    [7] = "Slack Term",
    [8] = "Preemption Priority & Defending Priority",
    [9] = "Admission Priority",
    [10] = "RPH Priority",
    [11] = "Excess Treatment",
    [12] = "PHB Class",
    [13] = "DSTE Class Type",
    [14] = "Y.1541 QoS Class",
}
local y2171_names = {
    [0] = "best-effort priority flow",
    [1] = "normal priority flow",
    [2] = "high priority flow",
    [255] = "locally significant (see Admission Priority)",
}
local excess_names = {
    [0] = "drop",
    [1] = "shape",
    [2] = "re-mark",
    [3] = "no metering or policing is permitted",
}
local y1541_names = {
    [0] = "Class 0 (real-time, highly interactive, jitter sensitive)",
    [1] = "Class 1 (real-time, interactive, jitter sensitive)",
    [2] = "Class 2 (highly interactive transaction data)",
    [3] = "Class 3 (interactive transaction data)",
    [4] = "Class 4 (low loss only)",
    [5] = "Class 5 (unspecified)",
    [6] = "Class 6 (highly loss sensitive, 100 ms)",
    [7] = "Class 7 (highly loss sensitive, 400 ms)",
}

------------------------------------------------------------------------------------------------
-- Fields
------------------------------------------------------------------------------------------------

local f = {
    type = ProtoField.uint8("qos_nslp.type", "Message Type", base.DEC, msg_types),
    msg_flags = ProtoField.uint8("qos_nslp.msg_flags", "Message Flags", base.HEX),
    tear = ProtoField.bool("qos_nslp.flags.tear", "TEAR (T)", 8, nil, 0x02),
    replace = ProtoField.bool("qos_nslp.flags.replace", "REPLACE (R)", 8, nil, 0x01),
    reserve_init = ProtoField.bool("qos_nslp.flags.reserve_init", "RESERVE-INIT (R)", 8, nil,
        0x01),
    msg_flags_undefined = ProtoField.uint8("qos_nslp.msg_flags.undefined",
        "Undefined bits (ignored)", base.HEX),
    generic_flags = ProtoField.uint16("qos_nslp.generic_flags", "Generic Flags", base.HEX),
    scoping = ProtoField.bool("qos_nslp.flags.scoping", "SCOPING (S)", 16, nil, 0x0001),
    proxy = ProtoField.bool("qos_nslp.flags.proxy", "PROXY (P)", 16, nil, 0x0002),
    ack_req = ProtoField.bool("qos_nslp.flags.ack_req", "ACK-REQ (A)", 16, nil, 0x0004),
    break_ = ProtoField.bool("qos_nslp.flags.break", "BREAK (B)", 16, nil, 0x0008),
    generic_reserved = ProtoField.uint16("qos_nslp.generic_flags.reserved",
        "Reserved (ignored)", base.HEX, nil, 0xfff0),

    obj = ProtoField.none("qos_nslp.obj", "Object"),
    obj_ab = ProtoField.uint16("qos_nslp.obj.ab", "Extensibility (AB)", base.DEC, ab_names,
        0xc000),
    obj_a = ProtoField.bool("qos_nslp.obj.a", "A", 16, nil, 0x8000),
    obj_b = ProtoField.bool("qos_nslp.obj.b", "B", 16, nil, 0x4000),
    obj_type = ProtoField.uint16("qos_nslp.obj.type", "Object Type", base.HEX, obj_types,
        0x0fff),
    obj_length = ProtoField.uint16("qos_nslp.obj.length", "Length (32-bit words)", base.DEC,
        nil, 0x0fff),
    obj_data = ProtoField.bytes("qos_nslp.obj.data", "Object Data"),

    rii = ProtoField.uint32("qos_nslp.rii", "Request Identification Information", base.DEC),
    rsn = ProtoField.uint32("qos_nslp.rsn", "Reservation Sequence Number", base.DEC),
    epoch = ProtoField.uint32("qos_nslp.epoch", "Epoch Identifier", base.DEC),
    refresh_period = ProtoField.uint32("qos_nslp.refresh_period", "Refresh Period (ms)",
        base.DEC),
    bsid_code = ProtoField.uint8("qos_nslp.bsid.code", "Binding Code", base.DEC, binding_codes),
    bsid_sid = ProtoField.bytes("qos_nslp.bsid.sid", "Session ID"),
    pc = ProtoField.uint8("qos_nslp.pc.flags", "Classifier Flags", base.HEX),
    pc_x = ProtoField.bool("qos_nslp.pc.x", "X (source address and prefix)", 8, nil, 0x80),
    pc_y = ProtoField.bool("qos_nslp.pc.y", "Y (destination address and prefix)", 8, nil,
        0x40),
    pc_p = ProtoField.bool("qos_nslp.pc.p", "P (protocol)", 8, nil, 0x20),
    pc_t = ProtoField.bool("qos_nslp.pc.t", "T (Diffserv code point)", 8, nil, 0x10),
    pc_f = ProtoField.bool("qos_nslp.pc.f", "F (flow label)", 8, nil, 0x08),
    pc_s = ProtoField.bool("qos_nslp.pc.s", "S (SPI)", 8, nil, 0x04),
    pc_a = ProtoField.bool("qos_nslp.pc.a", "A (source port)", 8, nil, 0x02),
    pc_b = ProtoField.bool("qos_nslp.pc.b", "B (destination port)", 8, nil, 0x01),
    sid_list_sid = ProtoField.bytes("qos_nslp.sid_list.sid", "Session ID"),
    rsn_list_epoch = ProtoField.uint32("qos_nslp.rsn_list.epoch", "Epoch Identifier", base.DEC),
    rsn_list_rsn = ProtoField.uint32("qos_nslp.rsn_list.rsn", "RSN", base.DEC),
    binding_d = ProtoField.bool("qos_nslp.binding.d", "D (bidirectional binding)", 32, nil, 0x1),
    msg_id = ProtoField.bytes("qos_nslp.msg_id", "Message ID"),
    bound_msg_id = ProtoField.bytes("qos_nslp.bound_msg_id", "Bound Message ID"),
    padding = ProtoField.bytes("qos_nslp.padding", "Reserved / padding"),

    info_code = ProtoField.uint8("qos_nslp.info.code", "Error Code", base.HEX),
    info_class = ProtoField.uint8("qos_nslp.info.class", "Error Class", base.DEC, error_classes,
        0xf0),
    info_esi_type = ProtoField.uint8("qos_nslp.info.esi_type", "Error Source Identifier Type",
        base.DEC, esi_types, 0x0f),
    info_esi_length = ProtoField.uint8("qos_nslp.info.esi_length", "ESI-Length (32-bit words)",
        base.DEC),
    info_esi_ipv4 = ProtoField.ipv4("qos_nslp.info.esi_ipv4", "Error Source (IPv4)"),
    info_esi_ipv6 = ProtoField.ipv6("qos_nslp.info.esi_ipv6", "Error Source (IPv6)"),
    info_esi_fqdn = ProtoField.string("qos_nslp.info.esi_fqdn", "Error Source (FQDN)"),
    info_esi_data = ProtoField.bytes("qos_nslp.info.esi_data", "Error Source Identifier"),
    info_specific = ProtoField.bytes("qos_nslp.info.specific", "Error-specific Information"),
    info_obj_type = ProtoField.uint16("qos_nslp.info.object_type",
        "Object Type Info: Object Type", base.HEX, obj_types),
    info_real_length = ProtoField.uint16("qos_nslp.info.real_length",
        "Object Value Info: Real Object Length", base.DEC, nil, 0x0fff),
    info_offset = ProtoField.uint16("qos_nslp.info.offset", "Object Value Info: Offset",
        base.DEC),
    info_object = ProtoField.bytes("qos_nslp.info.object", "Object Value Info: Object"),

    qspec = ProtoField.none("qos_nslp.qspec", "QSPEC"),
    qspec_version = ProtoField.uint32("qos_nslp.qspec.version", "Version", base.DEC, nil,
        0xf0000000),
    qspec_local = ProtoField.bool("qos_nslp.qspec.local", "I (Local QSPEC)", 32, nil,
        0x08000000),
    qspec_type = ProtoField.uint32("qos_nslp.qspec.type", "QSPEC Type", base.DEC, qspec_types,
        0x07c00000),
    qspec_reserved = ProtoField.uint32("qos_nslp.qspec.reserved", "Reserved", base.HEX, nil,
        0x00300000),
    qspec_msg_seq = ProtoField.uint32("qos_nslp.qspec.msg_seq", "Message Sequence", base.DEC,
        msg_sequences, 0x000f0000),
    qspec_obj_comb = ProtoField.uint32("qos_nslp.qspec.obj_comb", "Object Combination",
        base.DEC, nil, 0x0000f000),
    qspec_length = ProtoField.uint32("qos_nslp.qspec.length", "Length (32-bit words)", base.DEC,
        nil, 0x00000fff),
    qspec_data = ProtoField.bytes("qos_nslp.qspec.data", "QSPEC Data"),
    qobj = ProtoField.none("qos_nslp.qspec.obj", "QSPEC Object"),
    qobj_e = ProtoField.bool("qos_nslp.qspec.obj.e", "E (error at object level)", 32, nil,
        0x80000000),
    qobj_type = ProtoField.uint32("qos_nslp.qspec.obj.type", "Object Type", base.DEC,
        qspec_obj_types, 0x0fff0000),
    qobj_length = ProtoField.uint32("qos_nslp.qspec.obj.length", "Length (32-bit words)",
        base.DEC, nil, 0x00000fff),
    param = ProtoField.none("qos_nslp.qspec.param", "Parameter"),
    param_m = ProtoField.bool("qos_nslp.qspec.param.m", "M (must be interpreted)", 32, nil,
        0x80000000),
    param_e = ProtoField.bool("qos_nslp.qspec.param.e", "E (not met or in error)", 32, nil,
        0x40000000),
    param_n = ProtoField.bool("qos_nslp.qspec.param.n", "N (not supported on the path)", 32,
        nil, 0x20000000),
    param_id = ProtoField.uint32("qos_nslp.qspec.param.id", "Parameter ID", base.DEC,
        param_names, 0x0fff0000),
    param_length = ProtoField.uint32("qos_nslp.qspec.param.length", "Length (32-bit words)",
        base.DEC, nil, 0x00000fff),
    param_data = ProtoField.bytes("qos_nslp.qspec.param.data", "Parameter Data"),

    tmod_rate = ProtoField.float("qos_nslp.qspec.tmod.rate", "Token Rate r (octets/s)"),
    tmod_bucket = ProtoField.float("qos_nslp.qspec.tmod.bucket", "Bucket Depth b (octets)"),
    tmod_peak = ProtoField.float("qos_nslp.qspec.tmod.peak", "Peak Rate p (octets/s)"),
    tmod_m = ProtoField.uint32("qos_nslp.qspec.tmod.min_policed_unit",
        "Minimum Policed Unit m (octets)", base.DEC),
    tmod_mps = ProtoField.uint32("qos_nslp.qspec.tmod.max_packet_size",
        "Maximum Packet Size MPS (octets)", base.DEC),
    path_latency = ProtoField.uint32("qos_nslp.qspec.path_latency", "Path Latency (us)",
        base.DEC),
    jitter_variance = ProtoField.uint32("qos_nslp.qspec.jitter.variance",
        "Path Jitter STAT1, variance (us)", base.DEC),
    jitter_p999 = ProtoField.uint32("qos_nslp.qspec.jitter.p999",
        "Path Jitter STAT2, 99.9 percentile (us)", base.DEC),
    jitter_min = ProtoField.uint32("qos_nslp.qspec.jitter.min_latency",
        "Path Jitter STAT3, minimum latency (us)", base.DEC),
    jitter_reserved = ProtoField.uint32("qos_nslp.qspec.jitter.reserved",
        "Path Jitter STAT4, reserved", base.DEC),
    plr = ProtoField.float("qos_nslp.qspec.plr", "Path Packet Loss Ratio"),
    per = ProtoField.float("qos_nslp.qspec.per", "Path Packet Error Ratio"),
    slack = ProtoField.uint32("qos_nslp.qspec.slack_term", "Slack Term (us)", base.DEC),
    preemption = ProtoField.uint16("qos_nslp.qspec.preemption_priority", "Preemption Priority",
        base.DEC),
    defending = ProtoField.uint16("qos_nslp.qspec.defending_priority", "Defending Priority",
        base.DEC),
    y2171 = ProtoField.uint8("qos_nslp.qspec.admission.y2171", "Y.2171 Admission Priority",
        base.DEC, y2171_names),
    admission = ProtoField.uint8("qos_nslp.qspec.admission.priority", "Admission Priority",
        base.DEC),
    rph_namespace = ProtoField.uint16("qos_nslp.qspec.rph.namespace", "RPH Namespace",
        base.DEC),
    rph_priority = ProtoField.uint8("qos_nslp.qspec.rph.priority", "RPH Priority", base.DEC),
    excess = ProtoField.uint8("qos_nslp.qspec.excess.treatment", "Excess Treatment", base.DEC,
        excess_names),
    remark = ProtoField.uint8("qos_nslp.qspec.excess.remark", "Re-mark Value (DSCP)", base.DEC,
        nil, 0xfc),
    phb = ProtoField.uint16("qos_nslp.qspec.phb", "PHB Field", base.HEX),
    phb_dscp = ProtoField.uint16("qos_nslp.qspec.phb.dscp", "DSCP", base.DEC, nil, 0xfc00),
    phb_code = ProtoField.uint16("qos_nslp.qspec.phb.id_code", "PHB ID Code", base.HEX, nil,
        0xfff0),
    dste = ProtoField.uint8("qos_nslp.qspec.dste_class_type", "DSTE Class Type", base.DEC),
    y1541 = ProtoField.uint8("qos_nslp.qspec.y1541_class", "Y.1541 QoS Class", base.DEC,
        y1541_names),
    value_reserved = ProtoField.bytes("qos_nslp.qspec.reserved_bits", "Reserved"),

    trailing = ProtoField.bytes("qos_nslp.trailing", "Trailing Data"),
}

do
    local list = {}
    for _, field in pairs(f) do
        list[#list + 1] = field
    end
    qos.fields = list
end

------------------------------------------------------------------------------------------------
-- Expert info: each names the INFO-SPEC Protocol Error code (RFC 5974 §5.1.3.6) the codec's
-- ParseErrorKind::info_spec gives
------------------------------------------------------------------------------------------------

local ex = {
    short_message = ProtoExpert.new("qos_nslp.short_message",
        "Message shorter than the common header", expert.group.MALFORMED,
        expert.severity.ERROR),
    msg_type = ProtoExpert.new("qos_nslp.bad_type", "Illegal message type",
        expert.group.PROTOCOL, expert.severity.WARN),
    generic_flags = ProtoExpert.new("qos_nslp.bad_generic_flags", "Bad generic flags",
        expert.group.PROTOCOL, expert.severity.WARN),
    obj_length = ProtoExpert.new("qos_nslp.obj.bad_length", "Wrong object length",
        expert.group.MALFORMED, expert.severity.ERROR),
    object_rule = ProtoExpert.new("qos_nslp.object_error",
        "Missing, illegal, duplicate or unknown object", expert.group.PROTOCOL,
        expert.severity.WARN),
    bad_value = ProtoExpert.new("qos_nslp.obj.bad_value", "Erroneous value in an object",
        expert.group.PROTOCOL, expert.severity.WARN),
    qspec_length = ProtoExpert.new("qos_nslp.qspec.bad_length", "QSPEC length error",
        expert.group.MALFORMED, expert.severity.ERROR),
    qspec = ProtoExpert.new("qos_nslp.qspec.malformed", "Malformed or incompatible QSPEC",
        expert.group.PROTOCOL, expert.severity.WARN),
    unknown_object = ProtoExpert.new("qos_nslp.obj.unknown", "Object of unknown type",
        expert.group.UNDECODED, expert.severity.NOTE),
    unknown_param = ProtoExpert.new("qos_nslp.qspec.param.unknown", "QSPEC parameter not known",
        expert.group.UNDECODED, expert.severity.NOTE),
    unassigned = ProtoExpert.new("qos_nslp.unassigned", "Value not assigned (kept)",
        expert.group.PROTOCOL, expert.severity.NOTE),
    ignored = ProtoExpert.new("qos_nslp.ignored", "Ignored on receipt",
        expert.group.PROTOCOL, expert.severity.NOTE),
}
do
    local list = {}
    for _, e in pairs(ex) do
        list[#list + 1] = e
    end
    qos.experts = list
end

------------------------------------------------------------------------------------------------
-- Helpers
------------------------------------------------------------------------------------------------

local function name_of(t, v, default)
    return t[v] or ((default or "Unknown") .. " (" .. v .. ")")
end

local function hex(range)
    return tostring(range:bytes()):lower()
end

local function obj_name(t)
    return obj_types[t] or string.format("type 0x%03x", t)
end

-- Protocol Error codes (RFC 5974 §5.1.3.6) quoted in expert texts.
local function pe(code)
    return string.format(" (Protocol Error 0x%02x, %s)", code, error_codes[3][code])
end

-- Whether `s` is well-formed UTF-8 (what Rust's str::from_utf8 accepts: no overlong forms,
-- no surrogates, nothing above U+10FFFF).
local function valid_utf8(s)
    local i, n = 1, #s
    while i <= n do
        local c = s:byte(i)
        if c < 0x80 then
            i = i + 1
        else
            local need, lo, hi
            if c >= 0xc2 and c <= 0xdf then
                need, lo, hi = 1, 0x80, 0xbf
            elseif c == 0xe0 then
                need, lo, hi = 2, 0xa0, 0xbf
            elseif c == 0xed then
                need, lo, hi = 2, 0x80, 0x9f
            elseif c >= 0xe1 and c <= 0xef then
                need, lo, hi = 2, 0x80, 0xbf
            elseif c == 0xf0 then
                need, lo, hi = 3, 0x90, 0xbf
            elseif c >= 0xf1 and c <= 0xf3 then
                need, lo, hi = 3, 0x80, 0xbf
            elseif c == 0xf4 then
                need, lo, hi = 3, 0x80, 0x8f
            else
                return false
            end
            if i + need > n then
                return false
            end
            local c2 = s:byte(i + 1)
            if c2 < lo or c2 > hi then
                return false
            end
            for k = 2, need do
                local ck = s:byte(i + k)
                if ck < 0x80 or ck > 0xbf then
                    return false
                end
            end
            i = i + need + 1
        end
    end
    return true
end

-- IEEE single-precision checks on the raw bits (RFC 5975 §5.2.1: r, b and p have the sign
-- bit zero and an exponent of at least 127; NaN is no value, infinity is allowed. §5.2.5,
-- §5.2.6: a ratio is non-negative and finite).
local function float_parts(bits)
    return math.floor(bits / 2 ^ 31), math.floor(bits / 2 ^ 23) % 256, bits % 2 ^ 23
end

local function valid_tmod_float(bits)
    local sign, exponent, mantissa = float_parts(bits)
    return sign == 0 and exponent >= 127 and not (exponent == 255 and mantissa ~= 0)
end

local function valid_ratio(bits)
    local sign, exponent = float_parts(bits)
    return sign == 0 and exponent ~= 255
end

local function float_text(v)
    return string.format("%g", v)
end

------------------------------------------------------------------------------------------------
-- QSPEC (RFC 5975 §5)
------------------------------------------------------------------------------------------------

-- One parameter's value (§5.2.1-§5.2.14) at [off, off + len). Returns a summary, or nil and
-- reports an expert item when the value is wrong for the parameter (what
-- ParamValue::parse refuses).
local function dissect_param_value(tvb, off, len, id, tree)
    local function want(n)
        if len ~= n then
            tree:add_proto_expert_info(ex.qspec_length, string.format(
                "%s takes %d words, not %d" .. pe(12), param_names[id], n / 4, len / 4))
            if len > 0 then
                tree:add(f.param_data, tvb(off, len))
            end
            return false
        end
        return true
    end
    local function float_item(field, at, ok)
        local r = tvb(at, 4)
        local item = tree:add(field, r)
        if not ok(r:uint()) then
            item:add_proto_expert_info(ex.qspec, string.format(
                "Prohibited value 0x%08x for %s" .. pe(12), r:uint(), param_names[id]))
            return nil
        end
        return r:float()
    end
    if id == TMOD_1 or id == TMOD_2 then
        if not want(20) then
            return nil
        end
        local rate = float_item(f.tmod_rate, off, valid_tmod_float)
        local bucket = float_item(f.tmod_bucket, off + 4, valid_tmod_float)
        local peak = float_item(f.tmod_peak, off + 8, valid_tmod_float)
        tree:add(f.tmod_m, tvb(off + 12, 4))
        tree:add(f.tmod_mps, tvb(off + 16, 4))
        if rate == nil or bucket == nil or peak == nil then
            return nil
        end
        return string.format("r=%s b=%s p=%s m=%d MPS=%d", float_text(rate), float_text(bucket),
            float_text(peak), tvb(off + 12, 4):uint(), tvb(off + 16, 4):uint())
    elseif id == PATH_JITTER then
        if not want(16) then
            return nil
        end
        tree:add(f.jitter_variance, tvb(off, 4))
        tree:add(f.jitter_p999, tvb(off + 4, 4))
        tree:add(f.jitter_min, tvb(off + 8, 4))
        tree:add(f.jitter_reserved, tvb(off + 12, 4))
        return string.format("variance %d us, 99.9%% %d us, min %d us", tvb(off, 4):uint(),
            tvb(off + 4, 4):uint(), tvb(off + 8, 4):uint())
    elseif id >= PATH_LATENCY and id <= Y1541 then
        if not want(4) then
            return nil
        end
        local r = tvb(off, 4)
        local w = r:uint()
        local b0 = tvb(off, 1):uint()
        if id == PATH_LATENCY or id == SLACK_TERM then
            tree:add(id == PATH_LATENCY and f.path_latency or f.slack, r)
            if w == 4294967295 then
                return "indeterminate"
            end
            return w .. " us"
        elseif id == PATH_PLR or id == PATH_PER then
            local v = float_item(id == PATH_PLR and f.plr or f.per, off, valid_ratio)
            return v and float_text(v) or nil
        elseif id == PREEMPTION then
            tree:add(f.preemption, tvb(off, 2))
            tree:add(f.defending, tvb(off + 2, 2))
            return string.format("preemption %d, defending %d", tvb(off, 2):uint(),
                tvb(off + 2, 2):uint())
        elseif id == ADMISSION then
            tree:add(f.y2171, tvb(off, 1))
            tree:add(f.admission, tvb(off + 1, 1))
            tree:add(f.value_reserved, tvb(off + 2, 2))
            return string.format("Y.2171 %d, admission %d", b0, tvb(off + 1, 1):uint())
        elseif id == RPH then
            tree:add(f.rph_namespace, tvb(off, 2))
            tree:add(f.rph_priority, tvb(off + 2, 1))
            tree:add(f.value_reserved, tvb(off + 3, 1))
            return string.format("namespace %d, priority %d", tvb(off, 2):uint(),
                tvb(off + 2, 1):uint())
        elseif id == EXCESS then
            local item = tree:add(f.excess, tvb(off, 1))
            tree:add(f.remark, tvb(off + 1, 1))
            tree:add(f.value_reserved, tvb(off + 2, 2))
            if excess_names[b0] == nil then
                item:add_proto_expert_info(ex.unassigned, "Excess Treatment " .. b0
                    .. " is not assigned (0-3)")
            end
            local text = name_of(excess_names, b0, "treatment")
            if b0 == 2 then
                text = text .. " to DSCP " .. math.floor(tvb(off + 1, 1):uint() / 4)
            end
            return text
        elseif id == PHB_CLASS then
            local field = tvb(off, 2)
            local v = field:uint()
            local item = tree:add(f.phb, field)
            tree:add(f.value_reserved, tvb(off + 2, 2))
            -- §5.2.12 (RFC 3140 §2): the four forms, in the codec's order.
            local low, nibble = v % 1024, v % 16
            local text
            if low == 0 then
                item:add(f.phb_dscp, field)
                text = "single PHB, DSCP " .. math.floor(v / 1024)
            elseif low == 2 then
                item:add(f.phb_dscp, field)
                text = "set of PHBs, DSCP " .. math.floor(v / 1024)
            elseif nibble == 1 then
                item:add(f.phb_code, field)
                text = string.format("single non-standard PHB, ID code 0x%03x",
                    math.floor(v / 16))
            elseif nibble == 3 then
                item:add(f.phb_code, field)
                text = string.format("set of non-standard PHBs, ID code 0x%03x",
                    math.floor(v / 16))
            else
                item:add_proto_expert_info(ex.unassigned, "PHB Field matches none of the forms"
                    .. " of RFC 5975 §5.2.12")
                text = string.format("PHB Field 0x%04x", v)
            end
            item:append_text(" (" .. text .. ")")
            return text
        else
            local item = tree:add(id == DSTE and f.dste or f.y1541, tvb(off, 1))
            tree:add(f.value_reserved, tvb(off + 1, 3))
            if b0 > 7 then
                item:add_proto_expert_info(ex.unassigned, param_names[id] .. " " .. b0
                    .. " is outside 0-7")
            end
            return (id == DSTE and "class type " or "class ") .. b0
        end
    end
    -- Not a parameter of RFC 5975: kept as bytes (§3.3, §4.2.2: with M set a QNE that cannot
    -- interpret it fails the reservation; otherwise it sets N and goes on).
    if len > 0 then
        tree:add(f.param_data, tvb(off, len))
    end
    return len .. " bytes"
end

-- The objects of a QSPEC at [off, off + len) (len a multiple of four), their names appended to
-- `names`. Returns false where the codec stops.
local function dissect_qspec_objects(tvb, off, len, tree, names)
    local stop = off + len
    local pos = off
    local seen_objects = {}
    local ok = true
    while pos < stop do
        local h = tvb(pos, 4):uint()
        local otype = math.floor(h / 65536) % 4096
        local olen = (h % 4096) * 4
        local oname = qspec_obj_types[otype] or ("QSPEC object " .. otype)
        if pos + 4 + olen > stop then
            local item = tree:add(f.qobj, tvb(pos, stop - pos))
            item:add(f.qobj_e, tvb(pos, 4))
            item:add(f.qobj_type, tvb(pos, 4))
            item:add(f.qobj_length, tvb(pos, 4))
            item:append_text(": " .. oname)
            item:add_proto_expert_info(ex.qspec_length, string.format(
                "%s: %d words, %d left in the QSPEC" .. pe(12), oname, olen / 4,
                (stop - pos - 4) / 4))
            return false
        end
        local item = tree:add(f.qobj, tvb(pos, 4 + olen))
        names[#names + 1] = oname
        item:add(f.qobj_e, tvb(pos, 4))
        item:add(f.qobj_type, tvb(pos, 4))
        item:add(f.qobj_length, tvb(pos, 4))
        item:append_text(": " .. oname .. (has(h, 0x80000000) and " [E]" or ""))
        if qspec_obj_types[otype] == nil then
            item:add_proto_expert_info(ex.unassigned, "QSPEC object type " .. otype
                .. " is not QoS Desired, Available, Reserved or Minimum QoS")
        end
        -- §5.1: "Duplicate objects ... MUST NOT be used".
        if seen_objects[otype] then
            item:add_proto_expert_info(ex.qspec, "Second " .. oname .. pe(12))
            ok = false
        end
        seen_objects[otype] = true
        if olen == 0 then
            -- §5.1: "empty QSPEC Objects MUST NOT be used".
            item:add_proto_expert_info(ex.qspec, "Empty " .. oname .. pe(12))
            ok = false
        end
        local q, ostop = pos + 4, pos + 4 + olen
        local seen_params = {}
        while q < ostop do
            local ph = tvb(q, 4):uint()
            local id = math.floor(ph / 65536) % 4096
            local plen = (ph % 4096) * 4
            local pname = param_names[id] or ("Parameter " .. id)
            local avail = math.min(4 + plen, ostop - q)
            local p = item:add(f.param, tvb(q, avail))
            p:add(f.param_m, tvb(q, 4))
            p:add(f.param_e, tvb(q, 4))
            p:add(f.param_n, tvb(q, 4))
            p:add(f.param_id, tvb(q, 4))
            p:add(f.param_length, tvb(q, 4))
            local flags = {}
            if has(ph, 0x80000000) then flags[#flags + 1] = "M" end
            if has(ph, 0x40000000) then flags[#flags + 1] = "E" end
            if has(ph, 0x20000000) then flags[#flags + 1] = "N" end
            p:append_text(": <" .. pname .. ">" .. (#flags > 0 and
                (" [" .. table.concat(flags) .. "]") or ""))
            if q + 4 + plen > ostop then
                p:add_proto_expert_info(ex.qspec_length, string.format(
                    "<%s>: %d words, %d left in %s" .. pe(12), pname, plen / 4,
                    (ostop - q - 4) / 4, oname))
                return false
            end
            if param_names[id] == nil then
                p:add_proto_expert_info(ex.unknown_param, string.format(
                    "Parameter ID %d is not known: kept%s", id,
                    has(ph, 0x80000000) and "; M set, so a QNE that cannot interpret it fails"
                    .. " the reservation (RFC 5975 §4.2.2)" or ""))
            end
            local summary = dissect_param_value(tvb, q + 4, plen, id, p)
            if summary == nil then
                ok = false
            else
                p:append_text(" " .. summary)
            end
            -- §5.1: "duplicate parameters ... MUST NOT be used".
            if seen_params[id] then
                p:add_proto_expert_info(ex.qspec, "Second <" .. pname .. "> in " .. oname
                    .. pe(12))
                ok = false
            end
            seen_params[id] = true
            q = q + 4 + plen
        end
        pos = pos + 4 + olen
    end
    return ok
end

-- A QSPEC (§5.1) at [off, off + len); `depth` 1 for the Initiator QSPEC inside a Local QSPEC.
-- Returns whether the codec accepts it, whether it is a Local QSPEC, and a summary.
local dissect_qspec
dissect_qspec = function(tvb, off, len, tree, depth)
    if len < 4 then
        tree:add(f.qspec_data, tvb(off, len))
        tree:add_proto_expert_info(ex.qspec_length, len .. " bytes: shorter than the common"
            .. " QSPEC header" .. pe(12))
        return false, false, "truncated"
    end
    local hr = tvb(off, 4)
    local h = hr:uint()
    local version = math.floor(h / 2 ^ 28)
    local is_local = has(h, 0x08000000)
    local qtype = math.floor(h / 2 ^ 22) % 32
    local seq = math.floor(h / 65536) % 16
    local comb = math.floor(h / 4096) % 16
    local words = h % 4096
    tree:add(f.qspec_version, hr)
    tree:add(f.qspec_local, hr)
    tree:add(f.qspec_type, hr)
    tree:add(f.qspec_reserved, hr)
    local seq_item = tree:add(f.qspec_msg_seq, hr)
    tree:add(f.qspec_obj_comb, hr)
    local l_item = tree:add(f.qspec_length, hr)
    tree:append_text(string.format(": v%d, %s, %s, procedure %d/%d", version,
        is_local and "Local" or "Initiator", name_of(qspec_types, qtype, "type"), seq, comb))
    -- §3.2: a version this node does not speak is an Incompatible QSPEC.
    if version ~= 0 then
        tree:add_proto_expert_info(ex.qspec, "QSPEC version " .. version .. " not supported"
            .. pe(15))
        if len > 4 then
            tree:add(f.qspec_data, tvb(off + 4, len - 4))
        end
        return false, is_local, "version " .. version
    end
    -- §4.3, IANA §7: message sequences 0 and 1 with combinations 0-2, sequence 2 with 0.
    if not (((seq == 0 or seq == 1) and comb <= 2) or (seq == 2 and comb == 0)) then
        seq_item:add_proto_expert_info(ex.unassigned, string.format(
            "QSPEC procedure %d/%d is not assigned (RFC 5975 §4.3)", seq, comb))
    end
    if 4 + words * 4 > len then
        l_item:add_proto_expert_info(ex.qspec_length, string.format(
            "QSPEC Length %d words, %d present" .. pe(12), words, math.floor((len - 4) / 4)))
        if len > 4 then
            tree:add(f.qspec_data, tvb(off + 4, len - 4))
        end
        return false, is_local, "bad length"
    end
    local names = {}
    local ok = dissect_qspec_objects(tvb, off + 4, words * 4, tree, names)
    local summary = (is_local and "Local: " or "Initiator: ") .. table.concat(names, ", ")
    if words == 0 then
        -- §5.1: "Empty QSPECs ... MUST NOT be used".
        l_item:add_proto_expert_info(ex.qspec, "QSPEC without objects" .. pe(12))
        ok = false
    end
    local rest = len - 4 - words * 4
    if rest > 0 then
        local at = off + 4 + words * 4
        if is_local and depth == 0 then
            -- §4.1, Figure 3: a Local QSPEC carries the Initiator QSPEC after its own objects.
            local inner = tree:add(f.qspec, tvb(at, rest))
            inner:append_text(" (encapsulated Initiator QSPEC)")
            local inner_ok, inner_local, inner_summary = dissect_qspec(tvb, at, rest, inner, 1)
            summary = summary .. "; " .. inner_summary
            if inner_local then
                inner:add_proto_expert_info(ex.qspec,
                    "A Local QSPEC inside a Local QSPEC" .. pe(12))
                inner_ok = false
            end
            ok = ok and inner_ok
        else
            local item = tree:add(f.qspec_data, tvb(at, rest))
            item:add_proto_expert_info(ex.qspec, string.format(
                "%d bytes after the QSPEC's objects%s" .. pe(12), rest, is_local and
                " (the encapsulated QSPEC is a Local QSPEC)" or
                " (only a Local QSPEC encapsulates another)"))
            ok = false
        end
    end
    return ok, is_local, summary
end

------------------------------------------------------------------------------------------------
-- Objects (RFC 5974 §5.1.3)
------------------------------------------------------------------------------------------------

-- INFO-SPEC body (§5.1.3.6) at [off, off + len). Returns a summary and whether the codec
-- accepts it.
local function dissect_info_spec(tvb, off, len, tree)
    if len < 4 then
        tree:add_proto_expert_info(ex.obj_length, "INFO-SPEC shorter than a word" .. pe(8))
        if len > 0 then
            tree:add(f.obj_data, tvb(off, len))
        end
        return nil, false
    end
    tree:add(f.padding, tvb(off, 1))
    local code_r = tvb(off + 1, 1)
    local class_r = tvb(off + 2, 1)
    local code = code_r:uint()
    local class = math.floor(class_r:uint() / 16)
    local esi_type = class_r:uint() % 16
    local words = tvb(off + 3, 1):uint()
    local code_name = error_codes[class] and error_codes[class][code]
    local code_item = tree:add(f.info_code, code_r)
    if code_name then
        code_item:append_text(" (" .. code_name .. ")")
    end
    tree:add(f.info_class, class_r)
    tree:add(f.info_esi_type, class_r)
    local l_item = tree:add(f.info_esi_length, tvb(off + 3, 1))
    local summary = name_of(error_classes, class, "class") .. ": " .. (code_name or
        string.format("code 0x%02x", code))
    local esi_len = words * 4
    if 4 + esi_len > len then
        l_item:add_proto_expert_info(ex.bad_value, string.format(
            "ESI-Length %d words, %d left in the INFO-SPEC" .. pe(14), words, (len - 4) / 4))
        if len > 4 then
            tree:add(f.info_esi_data, tvb(off + 4, len - 4))
        end
        return summary, false
    end
    local ok = true
    local at = off + 4
    if esi_type == 0 then
        -- §5.1.3.6: "If no Error Source Identifier is included, the Error Source Identifier
        -- Type field must be zero".
        if words > 0 then
            l_item:add_proto_expert_info(ex.bad_value, "ESI Type 0 (none) with an ESI-Length"
                .. pe(14))
            tree:add(f.info_esi_data, tvb(at, esi_len))
            ok = false
        end
    elseif esi_type == 1 or esi_type == 2 then
        local want = esi_type == 1 and 1 or 4
        if words ~= want then
            l_item:add_proto_expert_info(ex.bad_value, string.format(
                "%s Error Source Identifier of %d words, not %d" .. pe(14),
                esi_types[esi_type], words, want))
            if esi_len > 0 then
                tree:add(f.info_esi_data, tvb(at, esi_len))
            end
            ok = false
        elseif esi_type == 1 then
            tree:add(f.info_esi_ipv4, tvb(at, 4))
            summary = summary .. " from " .. tostring(tvb(at, 4):ipv4())
        else
            tree:add(f.info_esi_ipv6, tvb(at, 16))
            summary = summary .. " from " .. tostring(tvb(at, 16):ipv6())
        end
    elseif esi_type == 3 then
        -- Zero-padded to a word: trailing NULs are padding.
        local name = esi_len > 0 and tvb(at, esi_len):raw():gsub("%z+$", "") or ""
        if esi_len > 0 then
            local item = tree:add(f.info_esi_fqdn, tvb(at, esi_len), name)
            if not valid_utf8(name) then
                item:add_proto_expert_info(ex.bad_value, "FQDN is not UTF-8" .. pe(14))
                ok = false
            end
        end
        summary = summary .. " from " .. name
    elseif esi_len > 0 then
        tree:add(f.info_esi_data, tvb(at, esi_len))
    end
    at = at + esi_len
    local rest = off + len - at
    if rest > 0 then
        -- The error-specific information has no tag (§5.1.3.6): one word after a Protocol
        -- Error reads as an Object Type Info, more as Object Value Info.
        local r = tvb(at, rest)
        local item = tree:add(f.info_specific, r)
        if rest == 4 then
            item:add(f.info_obj_type, tvb(at, 2))
            local t = tvb(at, 2):uint()
            item:append_text(" (Object Type Info: " .. obj_name(t) .. ")")
        else
            item:add(f.info_real_length, tvb(at, 2))
            item:add(f.info_offset, tvb(at + 2, 2))
            item:add(f.info_object, tvb(at + 4, rest - 4))
            item:append_text(" (Object Value Info)")
            if tvb(at + 2, 2):uint() == 0 and rest >= 8 then
                local t = tvb(at + 4, 2):uint() % 4096
                item:append_text(": " .. obj_name(t))
            end
        end
    end
    return summary, ok
end

-- How many objects of each known type a message type allows (§5.1.2, the codec's `allowed`).
local MANY = 1e9
local allowed = {
    [RESERVE] = {
        [RSN] = 1, [RII] = 1, [REFRESH_PERIOD] = 1, [BOUND_SESSION_ID] = MANY,
        [SESSION_ID_LIST] = 1, [RSN_LIST] = 1, [MSG_ID] = 1, [BOUND_MSG_ID] = 1,
        [INFO_SPEC] = 1, [PACKET_CLASSIFIER] = 1, [QSPEC] = 1,
    },
    [QUERY] = {
        [RII] = 1, [BOUND_SESSION_ID] = MANY, [PACKET_CLASSIFIER] = 1, [INFO_SPEC] = 1,
        [QSPEC] = 2,
    },
    [RESPONSE] = {
        [RII] = 1, [RSN] = 1, [INFO_SPEC] = 1, [SESSION_ID_LIST] = 1, [RSN_LIST] = 1,
        [QSPEC] = 1,
    },
    [NOTIFY] = { [INFO_SPEC] = 1, [QSPEC] = 1 },
}

-- Fixed body lengths (§5.1.3.1-§5.1.3.5, §5.1.3.9, §5.1.3.10).
local fixed_len = {
    [RII] = 4, [RSN] = 8, [REFRESH_PERIOD] = 4, [BOUND_SESSION_ID] = 20,
    [PACKET_CLASSIFIER] = 4, [MSG_ID] = 20, [BOUND_MSG_ID] = 20,
}

-- A known object's body at [off, off + len) under `item`. Returns a summary (or nil) and
-- whether the codec accepts it; `info` collects what the Info column shows.
local function dissect_body(tvb, off, len, t, item, info)
    local want = fixed_len[t]
    if want ~= nil and len ~= want then
        item:add_proto_expert_info(ex.obj_length, string.format(
            "%s takes %d words, not %d" .. pe(8), obj_types[t], want / 4, len / 4))
        if len > 0 then
            item:add(f.obj_data, tvb(off, len))
        end
        return nil, false
    end
    if t == RII then
        item:add(f.rii, tvb(off, 4))
        info[#info + 1] = "RII=" .. tvb(off, 4):uint()
        return tostring(tvb(off, 4):uint()), true
    elseif t == RSN then
        item:add(f.rsn, tvb(off, 4))
        item:add(f.epoch, tvb(off + 4, 4))
        info[#info + 1] = "RSN=" .. tvb(off, 4):uint()
        return string.format("%d, epoch 0x%08x", tvb(off, 4):uint(), tvb(off + 4, 4):uint()),
            true
    elseif t == REFRESH_PERIOD then
        item:add(f.refresh_period, tvb(off, 4))
        return tvb(off, 4):uint() .. " ms", true
    elseif t == BOUND_SESSION_ID then
        item:add(f.padding, tvb(off, 3))
        item:add(f.bsid_code, tvb(off + 3, 1))
        item:add(f.bsid_sid, tvb(off + 4, 16))
        return name_of(binding_codes, tvb(off + 3, 1):uint(), "binding") .. ", "
            .. hex(tvb(off + 4, 16)), true
    elseif t == PACKET_CLASSIFIER then
        local r = tvb(off, 1)
        local pc = item:add(f.pc, r)
        for _, field in ipairs({ f.pc_x, f.pc_y, f.pc_p, f.pc_t, f.pc_f, f.pc_s, f.pc_a,
            f.pc_b }) do
            pc:add(field, r)
        end
        item:add(f.padding, tvb(off + 1, 3))
        local names, letters = {}, { "X", "Y", "P", "T", "F", "S", "A", "B" }
        for i = 1, 8 do
            if has(r:uint(), 2 ^ (8 - i)) then
                names[#names + 1] = letters[i]
            end
        end
        return table.concat(names, " "), true
    elseif t == INFO_SPEC then
        local summary, ok = dissect_info_spec(tvb, off, len, item)
        if summary ~= nil then
            info[#info + 1] = summary
        end
        return summary, ok
    elseif t == SESSION_ID_LIST then
        if len % 16 ~= 0 then
            item:add_proto_expert_info(ex.obj_length, string.format(
                "%d bytes: not a whole number of 128-bit Session IDs" .. pe(8), len))
            item:add(f.obj_data, tvb(off, len))
            return nil, false
        end
        for at = off, off + len - 16, 16 do
            item:add(f.sid_list_sid, tvb(at, 16))
        end
        local n = len / 16
        return string.format("%d session%s", n, n == 1 and "" or "s"), true
    elseif t == RSN_LIST then
        if len < 4 then
            item:add_proto_expert_info(ex.obj_length, "RSN-LIST without its Epoch Identifier"
                .. pe(8))
            return nil, false
        end
        item:add(f.rsn_list_epoch, tvb(off, 4))
        local rsns = {}
        for at = off + 4, off + len - 4, 4 do
            item:add(f.rsn_list_rsn, tvb(at, 4))
            rsns[#rsns + 1] = tostring(tvb(at, 4):uint())
        end
        return string.format("epoch 0x%08x, RSNs %s", tvb(off, 4):uint(),
            table.concat(rsns, ",")), true
    elseif t == MSG_ID or t == BOUND_MSG_ID then
        item:add(f.padding, tvb(off, 3))
        item:add(f.binding_d, tvb(off, 4))
        item:add(t == MSG_ID and f.msg_id or f.bound_msg_id, tvb(off + 4, 16))
        return (tvb(off + 3, 1):uint() % 2 == 1 and "bidirectional" or "unidirectional")
            .. ", " .. hex(tvb(off + 4, 16)), true
    elseif t == QSPEC then
        if len == 0 then
            item:add_proto_expert_info(ex.qspec_length, "QSPEC object without a QSPEC" .. pe(12))
            return nil, false
        end
        local q = item:add(f.qspec, tvb(off, len))
        local ok, _, summary = dissect_qspec(tvb, off, len, q, 0)
        return summary, ok
    end
    return nil, true
end

------------------------------------------------------------------------------------------------
-- Messages (RFC 5974 §5.1.1, §5.1.2)
------------------------------------------------------------------------------------------------

function qos.dissector(tvb, pinfo, tree)
    local len = tvb:len()
    pinfo.cols.protocol = "QoS NSLP"
    local root = tree:add(qos, tvb())
    if len < 4 then
        root:add(f.trailing, tvb())
        root:add_proto_expert_info(ex.short_message, len .. " bytes: shorter than the 4-byte"
            .. " common header" .. pe(2))
        pinfo.cols.info:append(" QoS NSLP (truncated)")
        return len
    end
    local mt = tvb(0, 1):uint()
    local mflags = tvb(1, 1):uint()
    local gflags = tvb(2, 2):uint()
    local t_item = root:add(f.type, tvb(0, 1))
    local mf_item = root:add(f.msg_flags, tvb(1, 1))
    local gf_item = root:add(f.generic_flags, tvb(2, 2))
    local flag_text = {}
    -- §5.1.2.1 RESERVE `|Reserved |T|R|`, §5.1.2.2 QUERY `|Reserved |R|`; undefined bits
    -- "MUST be ignored on receiving" (§5.1.1).
    local defined = 0
    if mt == RESERVE then
        mf_item:add(f.tear, tvb(1, 1))
        mf_item:add(f.replace, tvb(1, 1))
        defined = 3
        if has(mflags, 2) then flag_text[#flag_text + 1] = "T" end
        if has(mflags, 1) then flag_text[#flag_text + 1] = "R" end
    elseif mt == QUERY then
        mf_item:add(f.reserve_init, tvb(1, 1))
        defined = 1
        if has(mflags, 1) then flag_text[#flag_text + 1] = "R" end
    end
    local undefined = mflags - mflags % (defined + 1)
    if undefined ~= 0 then
        mf_item:add(f.msg_flags_undefined, tvb(1, 1), undefined)
            :add_proto_expert_info(ex.ignored, "Undefined message flags ignored (§5.1.1)")
    end
    gf_item:add(f.scoping, tvb(2, 2))
    gf_item:add(f.proxy, tvb(2, 2))
    local a_item = gf_item:add(f.ack_req, tvb(2, 2))
    gf_item:add(f.break_, tvb(2, 2))
    local g_res = gf_item:add(f.generic_reserved, tvb(2, 2))
    if gflags >= 16 then
        g_res:add_proto_expert_info(ex.ignored, "Reserved generic flags ignored (§5.1.1)")
    end
    local ack_req = has(gflags, 4)
    if has(gflags, 1) then flag_text[#flag_text + 1] = "S" end
    if has(gflags, 2) then flag_text[#flag_text + 1] = "P" end
    if ack_req then flag_text[#flag_text + 1] = "A" end
    if has(gflags, 8) then flag_text[#flag_text + 1] = "B" end
    if ack_req and (mt == RESPONSE or mt == NOTIFY) then
        -- §5.1.1: ACK-REQ is "only used with RESERVE and QUERY messages".
        a_item:add_proto_expert_info(ex.ignored, "ACK-REQ on a " .. msg_types[mt]
            .. " is ignored")
    end

    local info = {}
    local title = name_of(msg_types, mt, "Message type")
    if #flag_text > 0 then
        title = title .. " [" .. table.concat(flag_text) .. "]"
    end
    root:append_text(", " .. title)
    if msg_types[mt] == nil then
        t_item:add_proto_expert_info(ex.msg_type, "Unknown message type " .. mt .. pe(1))
        if len > 4 then
            root:add(f.trailing, tvb(4, len - 4))
        end
        pinfo.cols.info:append(" QoS NSLP " .. title)
        return len
    end

    local counts, first_at = {}, {}
    local binding
    local pos = 4
    while pos < len do
        local left = len - pos
        if left < 4 then
            root:add(f.trailing, tvb(pos, left)):add_proto_expert_info(ex.obj_length,
                left .. " bytes after the last object" .. pe(2))
            break
        end
        local w = tvb(pos, 2):uint()
        local t = w % 4096
        local ab = math.floor(w / 16384)
        local body_len = (tvb(pos + 2, 2):uint() % 4096) * 4
        local size = math.min(4 + body_len, left)
        local item = root:add(f.obj, tvb(pos, size))
        item:add(f.obj_ab, tvb(pos, 2))
        item:add(f.obj_a, tvb(pos, 2))
        item:add(f.obj_b, tvb(pos, 2))
        item:add(f.obj_type, tvb(pos, 2))
        item:add(f.obj_length, tvb(pos + 2, 2))
        item:append_text(": " .. obj_name(t))
        if 4 + body_len > left then
            item:add_proto_expert_info(ex.obj_length, string.format(
                "%s of %d words runs past the message (%d bytes left)" .. pe(8), obj_name(t),
                body_len / 4, left - 4))
            if left > 4 then
                item:add(f.obj_data, tvb(pos + 4, left - 4))
            end
            break
        end
        if obj_types[t] == nil then
            if ab == 0 then
                item:add_proto_expert_info(ex.object_rule, string.format(
                    "Unknown object type 0x%03x with AB=00" .. pe(7), t))
            else
                item:add_proto_expert_info(ex.unknown_object, string.format(
                    "Object type 0x%03x unknown: %s (§5.1.3)", t, ab_short[ab]))
            end
            if body_len > 0 then
                item:add(f.obj_data, tvb(pos + 4, body_len))
            end
        else
            counts[t] = (counts[t] or 0) + 1
            if counts[t] == 1 then
                first_at[t] = pos
            end
            local limit = allowed[mt][t] or 0
            if limit == 0 then
                item:add_proto_expert_info(ex.object_rule, obj_types[t] .. " is not allowed in a "
                    .. msg_types[mt] .. pe(6))
            elseif counts[t] > limit then
                item:add_proto_expert_info(ex.object_rule, "One " .. obj_types[t]
                    .. " too many" .. pe(11))
            elseif t == MSG_ID or t == BOUND_MSG_ID then
                -- `[ MSG-ID / BOUND-MSG-ID ]`: one or the other.
                if binding ~= nil and binding ~= t then
                    item:add_proto_expert_info(ex.object_rule, obj_types[t] .. " with "
                        .. obj_types[binding] .. pe(6))
                end
                binding = t
            end
            local summary = dissect_body(tvb, pos + 4, body_len, t, item, info)
            if summary ~= nil and summary ~= "" then
                item:append_text(" (" .. summary .. ")")
            end
        end
        pos = pos + 4 + body_len
    end

    -- The grammar as a whole (§5.1.2), once every object has been read.
    if pos >= len then
        local function missing(t, why)
            root:add_proto_expert_info(ex.object_rule, "Missing " .. obj_types[t]
                .. (why or "") .. pe(5))
        end
        local function illegal(t, why)
            root:add_proto_expert_info(ex.object_rule, obj_types[t] .. why .. pe(6))
        end
        if counts[RSN_LIST] and not counts[SESSION_ID_LIST] then
            missing(SESSION_ID_LIST, " that the RSN-LIST refers to")
        end
        if mt == RESERVE then
            if not counts[RSN] then
                missing(RSN)
            end
            -- §5.1.2.1: a RESERVE without a QSPEC "MUST NOT include a PACKET-CLASSIFIER".
            if counts[PACKET_CLASSIFIER] and not counts[QSPEC] then
                illegal(PACKET_CLASSIFIER, " without a QSPEC")
            end
            -- §5.1.1: "The ACK-REQ flag must not be set for RESERVE messages that already
            -- include an RII object".
            if ack_req and counts[RII] then
                gf_item:add_proto_expert_info(ex.generic_flags, "ACK-REQ with an RII" .. pe(3))
            end
        elseif mt == QUERY then
            if not counts[QSPEC] then
                missing(QSPEC)
            end
        else
            if not counts[INFO_SPEC] then
                missing(INFO_SPEC)
            end
            -- `[ RII / RSN ]`.
            if mt == RESPONSE and counts[RII] and counts[RSN] then
                local later = first_at[RII] > first_at[RSN] and RII or RSN
                illegal(later, " with " .. obj_types[later == RII and RSN or RII]
                    .. " (one or the other)")
            end
        end
    end

    local text = "QoS NSLP " .. title
    if #info > 0 then
        text = text .. " " .. table.concat(info, " ")
    end
    root:append_text((#info > 0 and (", " .. table.concat(info, ", ")) or ""))
    pinfo.cols.info:append(" " .. text)
    return len
end

------------------------------------------------------------------------------------------------
-- Registration in GIST's NSLPID table (gist.lua)
------------------------------------------------------------------------------------------------

local registered = false

local function register()
    local ok, table_ = pcall(DissectorTable.get, "gist.nslpid")
    if not ok or table_ == nil then
        return false
    end
    for id = FIRST_NSLPID, LAST_NSLPID do
        table_:add(id, qos)
    end
    return true
end

registered = register()

-- Loaded before gist.lua (plug-in order, or -X lua_script: given in that order), the table
-- does not exist yet: register when the first capture is opened.
function qos.init()
    if not registered then
        registered = register()
    end
end
