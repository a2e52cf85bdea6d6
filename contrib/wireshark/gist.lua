-- gist.lua: Wireshark dissector for GIST, the NSIS transport layer (RFC 5971), and for the NSIS
-- Ping NSLP that pathwise carries in GIST's NSLP-Data.
--
-- Covers:
--   * D-mode: one message per UDP datagram on port 270, after the magic number 0x4e04bda5
--     (RFC 5971 §5.4.1); a datagram without the magic is still decoded, with a warning.
--   * C-mode: messages back to back on a TCP stream (§5.4.2), cut by the common header's
--     length and reassembled across segments (TCP desegmentation). On TCP port 270; on the
--     port a Stack-Configuration-Data advertised for TCP (§5.7.1: the MA runs wherever the
--     responder listens, so the dissector learns it from the D-mode handshake); and on any
--     other port through a heuristic that checks the common header and first object.
--   * The common header (A.1), the object TLV header with its A/B extensibility flags (A.2,
--     §5.2), and every object: Message-Routing-Information, path-coupled IPv4/IPv6 and loose-end
--     (A.3.1), Session-Identification (A.3.2), Network-Layer-Information (A.3.3),
--     Stack-Proposal (A.3.4), Stack-Configuration-Data with its MA-protocol-options (A.3.5),
--     Query-Cookie (A.3.6), Responder-Cookie (A.3.7), NAT-Traversal (A.3.8, opaque),
--     NSLP-Data (A.3.9), Hello-ID (A.3.10), the Error object with its Additional Information
--     (A.4.1-A.4.4; the object inside an Object Value Info shows its TLV header only), and
--     objects of unknown type (shown with their flags).
--   * The checks pathwise's codec (crates/gist/src/wire/) makes before it accepts a message
--     (§5.1 object rules, R and E flags, object lengths and values) as expert info, so a frame
--     shows the same verdict the codec reaches. Truncation and bad lengths are errors; protocol
--     violations are warnings.
--   * NSLP-Data is handed to the "gist.nslpid" dissector table. The Ping NSLP ("nslp_ping",
--     crates/gist/src/nslp/ping.rs) is registered there under NSLPID 32704, a preference.
--
-- The layouts follow pathwise's codec byte for byte; where RFC 5971 leaves room (the
-- MA-protocol-options Length counts bytes, as in the reference captures) the codec wins.
--
-- Load it for one run:
--     tshark -X lua_script:contrib/wireshark/gist.lua -r capture.pcap -V
-- or install it:
--     cp contrib/wireshark/gist.lua ~/.local/lib/wireshark/plugins/
-- Filter with gist, gist.type == 0 (Query), gist.nslpid, gist.obj.type, gist.mri.dst_ipv4,
-- nslp_ping.seq, ... (all of them:
--     tshark -G fields -X lua_script:contrib/wireshark/gist.lua | grep -E 'gist\.|nslp_ping\.'
-- ). Other ports: Decode As... UDP or TCP port -> GIST. The two heuristics (UDP: the magic
-- number; TCP: a plausible common header) can be switched off under Analyze > Enabled
-- Protocols.
--
-- The dissector never raises a Lua error: every read is checked against the bytes left, and
-- what does not fit is reported as expert info.

local gist = Proto("gist", "General Internet Signalling Transport")
local ping = Proto("nslp_ping", "NSIS Ping NSLP")

local GIST_PORT = 270
local MAGIC = 0x4e04bda5
local HEADER_LEN = 8
local PING_NSLPID = 32704

-- Lua 5.2 (Wireshark 4.0) has no bit operators; every mask used here is a power of two or a
-- low-bit mask, so arithmetic does.
local function has(v, mask)
    return math.floor(v / mask) % 2 == 1
end

local function pad4(n)
    return math.floor((n + 3) / 4) * 4
end

------------------------------------------------------------------------------------------------
-- Value strings (IANA "GIST Parameters", RFC 5971 A.4.4)
------------------------------------------------------------------------------------------------

local msg_types = {
    [0] = "Query",
    [1] = "Response",
    [2] = "Confirm",
    [3] = "Data",
    [4] = "Error",
    [5] = "MA-Hello",
}

local obj_types = {
    [0] = "Message-Routing-Information",
    [1] = "Session-Identification",
    [2] = "Network-Layer-Information",
    [3] = "Stack-Proposal",
    [4] = "Stack-Configuration-Data",
    [5] = "Query-Cookie",
    [6] = "Responder-Cookie",
    [7] = "NAT-Traversal",
    [8] = "NSLP-Data",
    [9] = "Error",
    [10] = "Hello-ID",
}
local MRI, SESSION_ID, NLI, STACK_PROPOSAL, SCD = 0, 1, 2, 3, 4
local QUERY_COOKIE, RESPONDER_COOKIE, NAT_TRAVERSAL, NSLP_DATA, ERROR, HELLO_ID =
    5, 6, 7, 8, 9, 10

local ab_names = {
    [0] = "Mandatory (AB=00): reject the message if unknown",
    [1] = "Ignore (AB=01): drop the object if unknown",
    [2] = "Forward (AB=10): forward unchanged if unknown",
    [3] = "Reserved (AB=11): invalid",
}

local mrm_names = {
    [0] = "Path-Coupled",
    [1] = "Loose-End",
}

local ma_protocols = {
    [0] = "Reserved",
    [1] = "TCP opened in the forwards direction",
    [2] = "TLS initiated in the forwards direction",
    [3] = "SCTP opened in the forwards direction",
    [4] = "DTLS initiated in the forwards direction",
}
local ma_short = { [1] = "TCP", [2] = "TLS", [3] = "SCTP", [4] = "DTLS" }

local ip_protocols = {
    [1] = "ICMP", [6] = "TCP", [17] = "UDP", [33] = "DCCP", [46] = "RSVP", [50] = "ESP",
    [51] = "AH", [58] = "ICMPv6", [132] = "SCTP",
}

local error_classes = {
    [0] = "Informational",
    [1] = "Success",
    [2] = "Protocol-Error",
    [3] = "Transient-Failure",
    [4] = "Permanent-Failure",
}

local error_codes = {
    [1] = "Common Header Parse Error",
    [2] = "Hop Limit Exceeded",
    [3] = "Incorrect Encapsulation",
    [4] = "Incorrectly Delivered Message",
    [5] = "No Routing State",
    [6] = "Unknown NSLPID",
    [7] = "Endpoint Found",
    [8] = "Message Too Large",
    [9] = "Object Type Error",
    [10] = "Object Value Error",
    [11] = "Invalid IP layer TTL",
    [12] = "MRI Validation Failure",
}

local error_subcodes = {
    [1] = {
        [0] = "Unknown Version", [1] = "Unknown Type", [2] = "Invalid R-flag",
        [3] = "Incorrect Message Length", [4] = "Invalid E-flag", [5] = "Invalid C-flag",
    },
    [9] = {
        [0] = "Duplicate Object", [1] = "Unrecognised Object", [2] = "Missing Object",
        [3] = "Invalid Object Type", [4] = "Untranslated Object",
        [5] = "Invalid Extensibility Flags",
    },
    [10] = {
        [0] = "Incorrect Length", [1] = "Value Not Supported",
        [2] = "Invalid Flag-Field Combination", [3] = "Empty List", [4] = "Invalid Cookie",
        [5] = "Stack-Proposal - Stack-Configuration-Data Mismatch",
    },
    [12] = { [0] = "MRI Too Wild", [1] = "IP Version Mismatch", [2] = "Ingress Filter Failure" },
}

local ai_types = {
    [1] = "Message Length Info",
    [2] = "MTU Info",
    [3] = "Object Type Info",
    [4] = "Object Value Info",
}

local ping_kinds = { [1] = "Request", [2] = "Reply" }

------------------------------------------------------------------------------------------------
-- Fields
------------------------------------------------------------------------------------------------

local f = {
    magic = ProtoField.uint32("gist.magic", "Magic Number", base.HEX),
    hdr = ProtoField.none("gist.hdr", "Common Header"),
    version = ProtoField.uint8("gist.version", "Version", base.DEC),
    hops = ProtoField.uint8("gist.hops", "GIST hops", base.DEC),
    length = ProtoField.uint16("gist.length", "Message Length (32-bit words)", base.DEC),
    nslpid = ProtoField.uint16("gist.nslpid", "NSLPID", base.DEC),
    c_flag = ProtoField.bool("gist.c_flag", "C (Q-mode encapsulated)", 8, nil, 0x80),
    type = ProtoField.uint8("gist.type", "Type", base.DEC, msg_types, 0x7f),
    flags = ProtoField.uint8("gist.flags", "Flags", base.HEX),
    s_flag = ProtoField.bool("gist.s_flag", "S (source address is the signalling source)", 8,
        nil, 0x80),
    r_flag = ProtoField.bool("gist.r_flag", "R (reply requested)", 8, nil, 0x40),
    e_flag = ProtoField.bool("gist.e_flag", "E (explicitly routed)", 8, nil, 0x20),
    hdr_reserved = ProtoField.uint8("gist.hdr.reserved", "Reserved", base.HEX, nil, 0x1f),

    obj = ProtoField.none("gist.obj", "Object"),
    obj_ab = ProtoField.uint16("gist.obj.ab", "Extensibility (AB)", base.DEC, ab_names, 0xc000),
    obj_a = ProtoField.bool("gist.obj.a", "A", 16, nil, 0x8000),
    obj_b = ProtoField.bool("gist.obj.b", "B", 16, nil, 0x4000),
    obj_type = ProtoField.uint16("gist.obj.type", "Object Type", base.DEC, obj_types, 0x0fff),
    obj_length = ProtoField.uint16("gist.obj.length", "Length (32-bit words)", base.DEC, nil,
        0x0fff),
    obj_data = ProtoField.bytes("gist.obj.data", "Object Data"),

    mri_mrm = ProtoField.uint8("gist.mri.mrm", "MRM-ID", base.DEC, mrm_names),
    mri_n = ProtoField.bool("gist.mri.n", "N (translated by a NAT)", 8, nil, 0x80),
    mri_ipver = ProtoField.uint8("gist.mri.ipver", "IP-Ver", base.DEC, nil, 0xf0),
    mri_p = ProtoField.bool("gist.mri.p", "P (protocol present)", 8, nil, 0x08),
    mri_t = ProtoField.bool("gist.mri.t", "T (DS-field present)", 8, nil, 0x04),
    mri_f = ProtoField.bool("gist.mri.f", "F (flow label present)", 8, nil, 0x02),
    mri_s = ProtoField.bool("gist.mri.s", "S (SPI present)", 8, nil, 0x01),
    mri_a = ProtoField.bool("gist.mri.a", "A (source port present)", 8, nil, 0x80),
    mri_b = ProtoField.bool("gist.mri.b", "B (destination port present)", 8, nil, 0x40),
    mri_d = ProtoField.bool("gist.mri.d", "D (upstream)", 8, nil, 0x20),
    mri_le_d = ProtoField.bool("gist.mri.le_d", "D (upstream)", 8, nil, 0x08),
    mri_src4 = ProtoField.ipv4("gist.mri.src_ipv4", "Source Address"),
    mri_dst4 = ProtoField.ipv4("gist.mri.dst_ipv4", "Destination Address"),
    mri_src6 = ProtoField.ipv6("gist.mri.src_ipv6", "Source Address"),
    mri_dst6 = ProtoField.ipv6("gist.mri.dst_ipv6", "Destination Address"),
    mri_src_prefix = ProtoField.uint8("gist.mri.src_prefix", "Source Prefix", base.DEC),
    mri_dst_prefix = ProtoField.uint8("gist.mri.dst_prefix", "Destination Prefix", base.DEC),
    mri_protocol = ProtoField.uint8("gist.mri.protocol", "Protocol", base.DEC, ip_protocols),
    mri_ds = ProtoField.uint8("gist.mri.ds_field", "DS-field", base.DEC, nil, 0xfc),
    mri_flow_label = ProtoField.uint32("gist.mri.flow_label", "Flow Label", base.HEX, nil,
        0x000fffff),
    mri_spi = ProtoField.uint32("gist.mri.spi", "SPI", base.HEX),
    mri_src_port = ProtoField.uint16("gist.mri.src_port", "Source Port", base.DEC),
    mri_dst_port = ProtoField.uint16("gist.mri.dst_port", "Destination Port", base.DEC),
    mri_data = ProtoField.bytes("gist.mri.data", "Method-specific Data"),

    sid = ProtoField.bytes("gist.sid", "Session ID"),

    nli_pi_len = ProtoField.uint8("gist.nli.pi_length", "PI-Length", base.DEC),
    nli_ttl = ProtoField.uint8("gist.nli.ip_ttl", "IP-TTL", base.DEC),
    nli_ipver = ProtoField.uint8("gist.nli.ipver", "IP-Ver", base.DEC, nil, 0xf0),
    nli_rsvt = ProtoField.uint32("gist.nli.rs_validity", "Routing State Validity Time (ms)",
        base.DEC),
    nli_pi = ProtoField.bytes("gist.nli.peer_identity", "Peer Identity"),
    nli_if4 = ProtoField.ipv4("gist.nli.interface_ipv4", "Interface Address"),
    nli_if6 = ProtoField.ipv6("gist.nli.interface_ipv6", "Interface Address"),

    sp_count = ProtoField.uint8("gist.sp.count", "Prof-Count", base.DEC),
    sp_profile = ProtoField.none("gist.sp.profile", "Profile"),
    sp_proto_count = ProtoField.uint8("gist.sp.proto_count", "Protocol Count", base.DEC),
    sp_proto = ProtoField.uint8("gist.sp.proto", "MA-Protocol-ID", base.DEC, ma_protocols),

    scd_count = ProtoField.uint8("gist.scd.count", "MPO-Count", base.DEC),
    scd_hold = ProtoField.uint32("gist.scd.hold_time", "MA-Hold-Time (ms)", base.DEC),
    mpo = ProtoField.none("gist.scd.mpo", "MA-protocol-options"),
    mpo_proto = ProtoField.uint8("gist.scd.mpo.proto", "MA-Protocol-ID", base.DEC, ma_protocols),
    mpo_profile = ProtoField.uint8("gist.scd.mpo.profile", "Profile", base.DEC),
    mpo_length = ProtoField.uint8("gist.scd.mpo.length", "Length (bytes)", base.DEC),
    mpo_d = ProtoField.bool("gist.scd.mpo.d", "D (do not use for the reverse direction)", 8, nil,
        0x80),
    mpo_data = ProtoField.bytes("gist.scd.mpo.data", "Options Data"),
    mpo_port = ProtoField.uint16("gist.scd.mpo.port", "Port", base.DEC),

    query_cookie = ProtoField.bytes("gist.query_cookie", "Query-Cookie"),
    responder_cookie = ProtoField.bytes("gist.responder_cookie", "Responder-Cookie"),
    nat_traversal = ProtoField.bytes("gist.nat_traversal", "NAT-Traversal"),
    nslp_data = ProtoField.bytes("gist.nslp_data", "NSLP-Data"),
    hello_id = ProtoField.uint32("gist.hello_id", "Hello-ID", base.HEX),

    err_class = ProtoField.uint8("gist.err.class", "Error Class", base.DEC, error_classes),
    err_code = ProtoField.uint16("gist.err.code", "Error Code", base.DEC, error_codes),
    err_subcode = ProtoField.uint8("gist.err.subcode", "Error Subcode", base.DEC),
    err_flags = ProtoField.uint8("gist.err.flags", "Flags", base.HEX),
    err_s = ProtoField.bool("gist.err.s", "S (Session ID included)", 8, nil, 0x80),
    err_m = ProtoField.bool("gist.err.m", "M (MRI included)", 8, nil, 0x40),
    err_c = ProtoField.bool("gist.err.c", "C (debugging comment included)", 8, nil, 0x20),
    err_d = ProtoField.bool("gist.err.d", "D (message in error was D-mode)", 8, nil, 0x10),
    err_q = ProtoField.bool("gist.err.q", "Q (message in error was Q-mode)", 8, nil, 0x08),
    err_mri_len = ProtoField.uint8("gist.err.mri_length", "MRI Length (32-bit words)", base.DEC),
    err_info_count = ProtoField.uint8("gist.err.info_count", "Info Count", base.DEC),
    err_orig = ProtoField.none("gist.err.orig", "Common Header of the message in error"),
    err_orig_version = ProtoField.uint8("gist.err.orig.version", "Version", base.DEC),
    err_orig_hops = ProtoField.uint8("gist.err.orig.hops", "GIST hops", base.DEC),
    err_orig_length = ProtoField.uint16("gist.err.orig.length", "Message Length (32-bit words)",
        base.DEC),
    err_orig_nslpid = ProtoField.uint16("gist.err.orig.nslpid", "NSLPID", base.DEC),
    err_orig_c = ProtoField.bool("gist.err.orig.c_flag", "C", 8, nil, 0x80),
    err_orig_type = ProtoField.uint8("gist.err.orig.type", "Type", base.DEC, msg_types, 0x7f),
    err_orig_s = ProtoField.bool("gist.err.orig.s_flag", "S", 8, nil, 0x80),
    err_orig_r = ProtoField.bool("gist.err.orig.r_flag", "R", 8, nil, 0x40),
    err_orig_e = ProtoField.bool("gist.err.orig.e_flag", "E", 8, nil, 0x20),
    err_sid = ProtoField.bytes("gist.err.sid", "Session ID"),
    err_mri = ProtoField.none("gist.err.mri", "Message Routing Information"),
    ai = ProtoField.none("gist.err.ai", "Additional Information"),
    ai_type = ProtoField.uint16("gist.err.ai.type", "AI-Type", base.DEC, ai_types),
    ai_length = ProtoField.uint16("gist.err.ai.length", "AI-Length (32-bit words)", base.DEC),
    ai_msg_length = ProtoField.uint16("gist.err.ai.msg_length",
        "Calculated Message Length (32-bit words)", base.DEC),
    ai_mtu = ProtoField.uint16("gist.err.ai.mtu", "Link MTU (bytes)", base.DEC),
    ai_obj_type = ProtoField.uint16("gist.err.ai.obj_type", "Object Type", base.DEC, obj_types,
        0x0fff),
    ai_real_length = ProtoField.uint16("gist.err.ai.real_length",
        "Real Object Length (32-bit words)", base.DEC, nil, 0x0fff),
    ai_offset = ProtoField.uint16("gist.err.ai.offset", "Offset (bytes)", base.DEC),
    ai_object = ProtoField.bytes("gist.err.ai.object", "Object"),
    ai_value = ProtoField.bytes("gist.err.ai.value", "AI-Value"),
    err_comment = ProtoField.string("gist.err.comment", "Debugging Comment"),

    padding = ProtoField.bytes("gist.padding", "Padding"),
    trailing = ProtoField.bytes("gist.trailing", "Trailing Data"),
}

do
    local list = {}
    for _, field in pairs(f) do
        list[#list + 1] = field
    end
    gist.fields = list
end

local pf = {
    version = ProtoField.uint8("nslp_ping.version", "Version", base.DEC),
    kind = ProtoField.uint8("nslp_ping.kind", "Kind", base.DEC, ping_kinds),
    hop_count = ProtoField.uint16("nslp_ping.hop_count", "Hop Count", base.DEC),
    seq = ProtoField.uint32("nslp_ping.seq", "Sequence Number", base.DEC),
    sent_at = ProtoField.uint64("nslp_ping.sent_at", "Sent At (ns, sender's clock)", base.DEC),
    hop = ProtoField.none("nslp_ping.hop", "Hop"),
    family = ProtoField.uint8("nslp_ping.hop.family", "Address Family", base.DEC,
        { [4] = "IPv4", [6] = "IPv6" }),
    reserved = ProtoField.bytes("nslp_ping.hop.reserved", "Reserved"),
    addr4 = ProtoField.ipv4("nslp_ping.hop.ipv4", "Address"),
    addr6 = ProtoField.ipv6("nslp_ping.hop.ipv6", "Address"),
    timestamp = ProtoField.uint64("nslp_ping.hop.timestamp", "Timestamp (ns, node's clock)",
        base.DEC),
    trailing = ProtoField.bytes("nslp_ping.trailing", "Trailing Data"),
}

do
    local list = {}
    for _, field in pairs(pf) do
        list[#list + 1] = field
    end
    ping.fields = list
end

------------------------------------------------------------------------------------------------
-- Expert info
------------------------------------------------------------------------------------------------

local ex = {
    truncated = ProtoExpert.new("gist.truncated", "Message truncated",
        expert.group.MALFORMED, expert.severity.ERROR),
    obj_overrun = ProtoExpert.new("gist.obj.overrun", "Object runs past the end of the message",
        expert.group.MALFORMED, expert.severity.ERROR),
    obj_length = ProtoExpert.new("gist.obj.bad_length",
        "Object length does not match its contents", expert.group.MALFORMED,
        expert.severity.ERROR),
    bad_value = ProtoExpert.new("gist.obj.bad_value", "Object value error",
        expert.group.PROTOCOL, expert.severity.WARN),
    no_magic = ProtoExpert.new("gist.no_magic", "D-mode message without the magic number",
        expert.group.PROTOCOL, expert.severity.WARN),
    length_mismatch = ProtoExpert.new("gist.length_mismatch",
        "Message Length does not match the datagram", expert.group.PROTOCOL,
        expert.severity.WARN),
    header = ProtoExpert.new("gist.header_error", "Common header parse error",
        expert.group.PROTOCOL, expert.severity.WARN),
    object_rule = ProtoExpert.new("gist.object_error", "Object type error",
        expert.group.PROTOCOL, expert.severity.WARN),
    unknown_object = ProtoExpert.new("gist.obj.unknown", "Object of unknown type",
        expert.group.UNDECODED, expert.severity.NOTE),
    ping_malformed = ProtoExpert.new("nslp_ping.malformed", "Malformed Ping NSLP message",
        expert.group.MALFORMED, expert.severity.ERROR),
    -- The codec ignores them, so only a note.
    ping_trailing = ProtoExpert.new("nslp_ping.trailing_data",
        "Bytes after the last hop", expert.group.PROTOCOL, expert.severity.NOTE),
}
gist.experts = {
    ex.truncated, ex.obj_overrun, ex.obj_length, ex.bad_value, ex.no_magic, ex.length_mismatch,
    ex.header, ex.object_rule, ex.unknown_object,
}
ping.experts = { ex.ping_malformed, ex.ping_trailing }

gist.prefs.ping_nslpid = Pref.uint("Ping NSLP NSLPID", PING_NSLPID,
    "NSLPID whose NSLP-Data is decoded as the NSIS Ping NSLP (pathwise: 32704)")

local nslp_table = DissectorTable.new("gist.nslpid", "GIST NSLPID", ftypes.UINT16, base.DEC,
    gist)

------------------------------------------------------------------------------------------------
-- Helpers
------------------------------------------------------------------------------------------------

-- A window [pos, stop) of a Tvb, read in order. Every read checks the bytes left; a read that
-- does not fit returns nil, and so does every read after it, so a run of reads can be checked
-- once, at its last value.
local Cursor = {}
Cursor.__index = Cursor

local function cursor(tvb, pos, len)
    return setmetatable({ tvb = tvb, start = pos, pos = pos, stop = pos + len }, Cursor)
end

function Cursor:left()
    return self.stop - self.pos
end

-- The next n bytes as a TvbRange (n >= 1), or nil.
function Cursor:take(n)
    if self.failed or n < 1 or self.pos + n > self.stop then
        self.failed = true
        return nil
    end
    local r = self.tvb(self.pos, n)
    self.pos = self.pos + n
    return r
end

function Cursor:skip(n)
    if self.failed or n < 0 or self.pos + n > self.stop then
        self.failed = true
        return false
    end
    self.pos = self.pos + n
    return true
end

-- The rest as a TvbRange, or nil when nothing is left (not a failure).
function Cursor:rest()
    if self.failed or self:left() < 1 then
        return nil
    end
    return self:take(self:left())
end

-- Offset of the read position from the start of the window.
function Cursor:offset()
    return self.pos - self.start
end

local function nslpid_name(n)
    if n == 0 then
        return "NSLP-independent"
    elseif n >= 1 and n <= 32 then
        return "QoS NSLP, aggregation level " .. (n - 1)
    elseif n == 33 then
        return "NATFW NSLP"
    elseif n == gist.prefs.ping_nslpid then
        return "Ping NSLP"
    elseif n >= 32704 and n <= 32767 then
        return "private/experimental"
    elseif n >= 32768 then
        return "reserved"
    end
    return "unassigned"
end

local function name_of(t, v, default)
    return t[v] or (default or "Unknown") .. " (" .. v .. ")"
end

local function hex(range)
    if range == nil then
        return ""
    end
    return tostring(range:bytes()):lower()
end

-- The bytes as text if they are printable ASCII (trailing NUL padding dropped), else nil.
local function printable(range)
    local s = range:raw():gsub("%z+$", "")
    if #s == 0 or s:find("[^\32-\126\t\r\n]") then
        return nil
    end
    return s
end

-- Reports a short read: the object (or field) ended before `what`.
local function short(tree, c, what)
    tree:add_proto_expert_info(ex.obj_length,
        string.format("Object ends before %s (%d bytes left at offset %d)", what, c:left(),
            c:offset()))
end

-- Anything left in the window once the object is decoded: the codec's "Incorrect Length".
local function check_end(tree, c, name)
    local r = c:rest()
    if r ~= nil then
        local item = tree:add(f.obj_data, r)
        item:append_text(" (unexpected)")
        item:add_proto_expert_info(ex.obj_length,
            string.format("%s: %d bytes beyond its contents (at offset %d)", name, r:len(),
                r:offset() - c.start))
    end
end

------------------------------------------------------------------------------------------------
-- Objects (RFC 5971 A.3, A.4)
------------------------------------------------------------------------------------------------

-- Message-Routing-Information body (A.3.1). Returns a one-line summary.
local function dissect_mri(c, tree)
    local mrm_r = c:take(1)
    if mrm_r == nil then
        short(tree, c, "the MRM-ID")
        return "empty"
    end
    local mrm = mrm_r:uint()
    tree:add(f.mri_mrm, mrm_r)
    local n_r = c:take(1)
    if n_r == nil then
        short(tree, c, "the N flag")
        return name_of(mrm_names, mrm, "MRM")
    end
    tree:add(f.mri_n, n_r)

    if mrm == 0 then
        -- Path-coupled (A.3.1.1).
        local b2 = c:take(1)
        local b3 = c:take(1)
        if b3 == nil then
            short(tree, c, "the flags")
            return "Path-Coupled"
        end
        tree:add(f.mri_ipver, b2)
        tree:add(f.mri_p, b2)
        tree:add(f.mri_t, b2)
        tree:add(f.mri_f, b2)
        tree:add(f.mri_s, b2)
        tree:add(f.mri_a, b3)
        tree:add(f.mri_b, b3)
        local d_item = tree:add(f.mri_d, b3)
        local v2, v3 = b2:uint(), b3:uint()
        local ver = math.floor(v2 / 16)
        local p, t, fl, s = has(v2, 0x08), has(v2, 0x04), has(v2, 0x02), has(v2, 0x01)
        local a, b, d = has(v3, 0x80), has(v3, 0x40), has(v3, 0x20)
        if ver ~= 4 and ver ~= 6 then
            tree:add_proto_expert_info(ex.bad_value,
                "IP-Ver " .. ver .. " not supported (Object Value Error, Value Not Supported)")
            local r = c:rest()
            if r ~= nil then
                tree:add(f.mri_data, r)
            end
            return "Path-Coupled, IP-Ver " .. ver
        end
        if (fl and ver == 4) or (s and (a or b)) or ((a or b or s) and not p) then
            d_item:add_proto_expert_info(ex.bad_value,
                "Flags contradict each other (Object Value Error, Invalid Flag-Field Combination)")
        end
        local alen = ver == 4 and 4 or 16
        local src_r, dst_r = c:take(alen), c:take(alen)
        if dst_r == nil then
            short(tree, c, "the addresses")
            return "Path-Coupled"
        end
        local src, dst
        if ver == 4 then
            tree:add(f.mri_src4, src_r)
            tree:add(f.mri_dst4, dst_r)
            src, dst = tostring(src_r:ipv4()), tostring(dst_r:ipv4())
        else
            tree:add(f.mri_src6, src_r)
            tree:add(f.mri_dst6, dst_r)
            src, dst = tostring(src_r:ipv6()), tostring(dst_r:ipv6())
        end
        local sp_r, dp_r = c:take(1), c:take(1)
        local proto_r, ds_r = c:take(1), c:take(1)
        if ds_r == nil then
            short(tree, c, "the prefixes, protocol and DS-field")
            return "Path-Coupled, " .. src .. " -> " .. dst
        end
        local max = ver == 4 and 32 or 128
        local sp_item = tree:add(f.mri_src_prefix, sp_r)
        local dp_item = tree:add(f.mri_dst_prefix, dp_r)
        if sp_r:uint() > max then
            sp_item:add_proto_expert_info(ex.bad_value, "Prefix longer than the address")
        end
        if dp_r:uint() > max then
            dp_item:add_proto_expert_info(ex.bad_value, "Prefix longer than the address")
        end
        if p then
            tree:add(f.mri_protocol, proto_r)
        end
        if t then
            tree:add(f.mri_ds, ds_r)
        end
        if fl then
            local r = c:take(4)
            if r == nil then
                short(tree, c, "the flow label")
                return "Path-Coupled"
            end
            tree:add(f.mri_flow_label, r)
        end
        if s then
            local r = c:take(4)
            if r == nil then
                short(tree, c, "the SPI")
                return "Path-Coupled"
            end
            tree:add(f.mri_spi, r)
        end
        local summary_src, summary_dst = src, dst
        if a or b then
            local sport, dport = c:take(2), c:take(2)
            if dport == nil then
                short(tree, c, "the ports")
                return "Path-Coupled"
            end
            if a then
                tree:add(f.mri_src_port, sport)
                summary_src = summary_src .. ":" .. sport:uint()
            end
            if b then
                tree:add(f.mri_dst_port, dport)
                summary_dst = summary_dst .. ":" .. dport:uint()
            end
        end
        check_end(tree, c, "MRI")
        return string.format("Path-Coupled, %s/%d -> %s/%d, %s", summary_src, sp_r:uint(),
            summary_dst, dp_r:uint(), d and "upstream" or "downstream")
    elseif mrm == 1 then
        -- Loose-end (A.3.1.2).
        local b2 = c:take(1)
        local b3 = c:take(1)
        if b3 == nil then
            short(tree, c, "the flags")
            return "Loose-End"
        end
        tree:add(f.mri_ipver, b2)
        tree:add(f.mri_le_d, b2)
        local ver = math.floor(b2:uint() / 16)
        local d = has(b2:uint(), 0x08)
        if ver ~= 4 and ver ~= 6 then
            tree:add_proto_expert_info(ex.bad_value,
                "IP-Ver " .. ver .. " not supported (Object Value Error, Value Not Supported)")
            local r = c:rest()
            if r ~= nil then
                tree:add(f.mri_data, r)
            end
            return "Loose-End, IP-Ver " .. ver
        end
        local alen = ver == 4 and 4 or 16
        local src_r, dst_r = c:take(alen), c:take(alen)
        if dst_r == nil then
            short(tree, c, "the addresses")
            return "Loose-End"
        end
        local src, dst
        if ver == 4 then
            tree:add(f.mri_src4, src_r)
            tree:add(f.mri_dst4, dst_r)
            src, dst = tostring(src_r:ipv4()), tostring(dst_r:ipv4())
        else
            tree:add(f.mri_src6, src_r)
            tree:add(f.mri_dst6, dst_r)
            src, dst = tostring(src_r:ipv6()), tostring(dst_r:ipv6())
        end
        check_end(tree, c, "MRI")
        return string.format("Loose-End, %s -> %s, %s", src, dst,
            d and "upstream" or "downstream")
    end
    -- Any other method: opaque, as in the codec.
    local r = c:rest()
    if r ~= nil then
        tree:add(f.mri_data, r)
    end
    return name_of(mrm_names, mrm, "MRM")
end

-- Network-Layer-Information body (A.3.3).
local function dissect_nli(c, tree, ctx)
    local pi_r, ttl_r, ver_r = c:take(1), c:take(1), c:take(1)
    if ver_r == nil or not c:skip(1) then
        short(tree, c, "PI-Length, IP-TTL and IP-Ver")
        return ""
    end
    tree:add(f.nli_pi_len, pi_r)
    tree:add(f.nli_ttl, ttl_r)
    tree:add(f.nli_ipver, ver_r)
    local rsvt = c:take(4)
    if rsvt == nil then
        short(tree, c, "the Routing State Validity Time")
        return ""
    end
    tree:add(f.nli_rsvt, rsvt)
    local pi_len = pi_r:uint()
    if pi_len > 0 then
        local pi = c:take(pi_len)
        if pi == nil or not c:skip(pad4(pi_len) - pi_len) then
            short(tree, c, "the end of the Peer Identity")
            return ""
        end
        tree:add(f.nli_pi, pi)
    end
    local ver = math.floor(ver_r:uint() / 16)
    local addr
    if ver == 4 then
        local r = c:take(4)
        if r == nil then
            short(tree, c, "the interface address")
            return ""
        end
        tree:add(f.nli_if4, r)
        addr = tostring(r:ipv4())
    elseif ver == 6 then
        local r = c:take(16)
        if r == nil then
            short(tree, c, "the interface address")
            return ""
        end
        tree:add(f.nli_if6, r)
        addr = tostring(r:ipv6())
    else
        tree:add_proto_expert_info(ex.bad_value,
            "IP-Ver " .. ver .. " not supported (Object Value Error, Value Not Supported)")
        local r = c:rest()
        if r ~= nil then
            tree:add(f.obj_data, r)
        end
        return ""
    end
    check_end(tree, c, "NLI")
    ctx.nli_addr = addr
    return string.format("%s, TTL %d, validity %d ms", addr, ttl_r:uint(), rsvt:uint())
end

-- Stack-Proposal body (A.3.4).
local function dissect_stack_proposal(c, tree)
    local count_r = c:take(1)
    if count_r == nil or not c:skip(3) then
        short(tree, c, "Prof-Count")
        return ""
    end
    local count_item = tree:add(f.sp_count, count_r)
    local count = count_r:uint()
    if count == 0 then
        count_item:add_proto_expert_info(ex.bad_value,
            "No profile (Object Value Error, Value Not Supported)")
    end
    local summary = {}
    for i = 1, count do
        local at = c.pos
        local n_r = c:take(1)
        if n_r == nil then
            short(tree, c, "profile " .. i)
            return table.concat(summary, "; ")
        end
        local n = n_r:uint()
        local len = pad4(1 + n)
        local sub = tree:add(f.sp_profile, c.tvb(at, math.min(len, c.stop - at)))
        sub:append_text(" " .. i)
        sub:add(f.sp_proto_count, n_r)
        if n == 0 then
            sub:add_proto_expert_info(ex.bad_value,
                "Empty profile (Object Value Error, Empty List)")
        end
        local names = {}
        for _ = 1, n do
            local id = c:take(1)
            if id == nil then
                short(sub, c, "the end of profile " .. i)
                return table.concat(summary, "; ")
            end
            sub:add(f.sp_proto, id)
            names[#names + 1] = ma_short[id:uint()] or tostring(id:uint())
        end
        local padn = len - 1 - n
        if padn > 0 then
            local padr = c:take(padn)
            if padr == nil then
                short(sub, c, "the padding of profile " .. i)
                return table.concat(summary, "; ")
            end
            sub:add(f.padding, padr)
        end
        sub:append_text(": " .. table.concat(names, "/"))
        summary[#summary + 1] = table.concat(names, "/")
    end
    check_end(tree, c, "Stack-Proposal")
    return table.concat(summary, ", ")
end

-- Stack-Configuration-Data body (A.3.5).
local function dissect_scd(c, tree, ctx)
    local count_r = c:take(1)
    if count_r == nil or not c:skip(3) then
        short(tree, c, "MPO-Count")
        return ""
    end
    tree:add(f.scd_count, count_r)
    local hold = c:take(4)
    if hold == nil then
        short(tree, c, "MA-Hold-Time")
        return ""
    end
    tree:add(f.scd_hold, hold)
    local summary = {}
    for i = 1, count_r:uint() do
        local at = c.pos
        local proto_r, prof_r, len_r, d_r = c:take(1), c:take(1), c:take(1), c:take(1)
        if d_r == nil then
            short(tree, c, "MA-protocol-options " .. i)
            return table.concat(summary, ", ")
        end
        local n = len_r:uint()
        if proto_r:uint() == 2 then
            -- Forwards-TLS (RFC 5971 §5.7.3): the TCP port of this profile carries TLS.
            ctx.tls_profiles[prof_r:uint()] = true
        end
        local sub = tree:add(f.mpo, c.tvb(at, math.min(4 + pad4(n), c.stop - at)))
        sub:append_text(" " .. i .. ": " .. name_of(ma_short, proto_r:uint(), "protocol")
            .. ", profile " .. prof_r:uint())
        sub:add(f.mpo_proto, proto_r)
        sub:add(f.mpo_profile, prof_r)
        sub:add(f.mpo_length, len_r)
        sub:add(f.mpo_d, d_r)
        if n > 0 then
            local data = c:take(n)
            if data == nil then
                short(sub, c, "the end of the options data")
                return table.concat(summary, ", ")
            end
            sub:add(f.mpo_data, data)
            local proto = proto_r:uint()
            if proto >= 1 and proto <= 4 and n >= 2 then
                sub:add(f.mpo_port, data(0, 2))
                sub:append_text(", port " .. data(0, 2):uint())
                summary[#summary + 1] = (ma_short[proto] or "?") .. " port " .. data(0, 2):uint()
                if proto == 1 then
                    ctx.tcp_ports[#ctx.tcp_ports + 1] = { data(0, 2):uint(), prof_r:uint() }
                end
            end
            local padn = pad4(n) - n
            if padn > 0 then
                local padr = c:take(padn)
                if padr == nil then
                    short(sub, c, "the padding of the options data")
                    return table.concat(summary, ", ")
                end
                sub:add(f.padding, padr)
            end
        end
    end
    check_end(tree, c, "Stack-Configuration-Data")
    table.insert(summary, 1, "hold " .. hold:uint() .. " ms")
    return table.concat(summary, ", ")
end

-- The common header of a message in error (inside an Error object).
local function dissect_orig_header(tvb, off, tree)
    local sub = tree:add(f.err_orig, tvb(off, 8))
    sub:add(f.err_orig_version, tvb(off, 1))
    sub:add(f.err_orig_hops, tvb(off + 1, 1))
    sub:add(f.err_orig_length, tvb(off + 2, 2))
    sub:add(f.err_orig_nslpid, tvb(off + 4, 2))
    sub:add(f.err_orig_c, tvb(off + 6, 1))
    sub:add(f.err_orig_type, tvb(off + 6, 1))
    sub:add(f.err_orig_s, tvb(off + 7, 1))
    sub:add(f.err_orig_r, tvb(off + 7, 1))
    sub:add(f.err_orig_e, tvb(off + 7, 1))
    local t = tvb(off + 6, 1):uint() % 128
    sub:append_text(": " .. name_of(msg_types, t, "Type") .. ", NSLPID " .. tvb(off + 4, 2):uint())
end

local dissect_object_header

-- One Additional Information field (A.4.3).
local function dissect_ai(c, tree, index)
    local at = c.pos
    local type_r, len_r = c:take(2), c:take(2)
    if len_r == nil then
        short(tree, c, "Additional Information " .. index)
        return false
    end
    local ai_type = type_r:uint()
    local len = len_r:uint() * 4
    local sub = tree:add(f.ai, c.tvb(at, math.min(4 + len, c.stop - at)))
    sub:append_text(" " .. index .. ": " .. name_of(ai_types, ai_type, "AI-Type"))
    sub:add(f.ai_type, type_r)
    sub:add(f.ai_length, len_r)
    if len > c:left() then
        sub:add_proto_expert_info(ex.obj_length,
            string.format("AI-Length %d bytes, %d left in the object", len, c:left()))
        local r = c:rest()
        if r ~= nil then
            sub:add(f.ai_value, r)
        end
        return false
    end
    if len == 0 then
        if ai_type >= 1 and ai_type <= 4 then
            sub:add_proto_expert_info(ex.obj_length, "Empty AI-Value")
        end
        return true
    end
    local v = c:take(len)
    if ai_type >= 1 and ai_type <= 3 then
        if len ~= 4 then
            sub:add_proto_expert_info(ex.obj_length, "AI-Value must be one word")
            sub:add(f.ai_value, v)
            return true
        end
        local field = ({ f.ai_msg_length, f.ai_mtu, f.ai_obj_type })[ai_type]
        sub:add(field, v(0, 2))
        sub:append_text(": " .. (ai_type == 3 and name_of(obj_types, v(0, 2):uint() % 4096,
            "Type") or tostring(v(0, 2):uint())))
    elseif ai_type == 4 then
        if len < 4 then
            sub:add_proto_expert_info(ex.obj_length, "Object Value Info shorter than a word")
            sub:add(f.ai_value, v)
            return true
        end
        sub:add(f.ai_real_length, v(0, 2))
        sub:add(f.ai_offset, v(2, 2))
        if len > 4 then
            local obj = sub:add(f.ai_object, v(4, len - 4))
            if len - 4 >= 4 then
                dissect_object_header(c.tvb, v:offset() + 4, obj)
            end
        end
    else
        sub:add(f.ai_value, v)
    end
    return true
end

-- Error object body (A.4.1).
local function dissect_error_object(c, tree, mri_tree_fn)
    local class_r, code_r, sub_r = c:take(1), c:take(2), c:take(1)
    local flags_r = c:take(1)
    local rsv_ok = c:skip(1)
    local mri_len_r, count_r = c:take(1), c:take(1)
    if count_r == nil or not rsv_ok then
        short(tree, c, "the fixed part")
        return ""
    end
    local class, code, subcode = class_r:uint(), code_r:uint(), sub_r:uint()
    tree:add(f.err_class, class_r)
    tree:add(f.err_code, code_r)
    local sub_item = tree:add(f.err_subcode, sub_r)
    local sub_name = error_subcodes[code] and error_subcodes[code][subcode]
    if sub_name then
        sub_item:append_text(" (" .. sub_name .. ")")
    end
    local fl = tree:add(f.err_flags, flags_r)
    fl:add(f.err_s, flags_r)
    fl:add(f.err_m, flags_r)
    fl:add(f.err_c, flags_r)
    fl:add(f.err_d, flags_r)
    fl:add(f.err_q, flags_r)
    tree:add(f.err_mri_len, mri_len_r)
    tree:add(f.err_info_count, count_r)
    local flags = flags_r:uint()
    local summary = name_of(error_classes, class, "Class") .. ": "
        .. name_of(error_codes, code, "Code") .. (sub_name and (", " .. sub_name) or
            (", subcode " .. subcode))
    local orig = c:take(8)
    if orig == nil then
        short(tree, c, "the common header of the message in error")
        return summary
    end
    dissect_orig_header(c.tvb, orig:offset(), tree)
    if has(flags, 0x80) then
        local r = c:take(16)
        if r == nil then
            short(tree, c, "the Session ID")
            return summary
        end
        tree:add(f.err_sid, r)
    end
    if has(flags, 0x40) then
        local n = mri_len_r:uint() * 4
        if n > c:left() then
            short(tree, c, "the end of the MRI (MRI Length " .. mri_len_r:uint() .. " words)")
            return summary
        end
        if n > 0 then
            local r = c:take(n)
            local mt = tree:add(f.err_mri, r)
            mt:append_text(": " .. mri_tree_fn(cursor(c.tvb, r:offset(), n), mt))
        else
            tree:add_proto_expert_info(ex.obj_length, "M flag set with MRI Length 0")
        end
    end
    for i = 1, count_r:uint() do
        if not dissect_ai(c, tree, i) then
            return summary
        end
    end
    if has(flags, 0x20) then
        -- The rest, NUL-terminated and padded; the codec accepts an empty one.
        local r = c:rest()
        if r ~= nil then
            tree:add(f.err_comment, r, r:raw():match("^[^%z]*"))
        end
    end
    check_end(tree, c, "Error object")
    return summary
end

-- The TLV header of an object at `off` (4 bytes available), as items under `tree`.
dissect_object_header = function(tvb, off, tree)
    local w = tvb(off, 2)
    local ab = math.floor(w:uint() / 16384)
    local t = w:uint() % 4096
    tree:add(f.obj_ab, w)
    tree:add(f.obj_a, w)
    tree:add(f.obj_b, w)
    tree:add(f.obj_type, w)
    tree:add(f.obj_length, tvb(off + 2, 2))
    tree:append_text(": " .. name_of(obj_types, t, "Type") .. ", " .. (tvb(off + 2, 2):uint()
        % 4096) * 4 .. " bytes")
    return ab, t
end

------------------------------------------------------------------------------------------------
-- Messages (RFC 5971 §5.1, A.1)
------------------------------------------------------------------------------------------------

local function bit(t)
    return 2 ^ t
end

-- (allowed, required) object types per message type (§5.1), as in the codec.
local function object_rules(msg_type)
    local core = bit(MRI) + bit(SESSION_ID)
    local stack = bit(STACK_PROPOSAL) + bit(SCD)
    local nat = bit(NAT_TRAVERSAL)
    local nslp = bit(NSLP_DATA)
    if msg_type == 0 then
        local req = core + bit(NLI) + bit(QUERY_COOKIE)
        return req + stack + nat + nslp, req
    elseif msg_type == 1 then
        local req = core + bit(NLI) + bit(QUERY_COOKIE)
        return req + bit(RESPONDER_COOKIE) + stack + nat + nslp, req
    elseif msg_type == 2 then
        local req = core + bit(NLI)
        return req + bit(RESPONDER_COOKIE) + stack + nslp, req
    elseif msg_type == 3 then
        return core + nat + bit(NLI) + nslp, core + nslp
    elseif msg_type == 4 then
        return nat + bit(NLI) + bit(ERROR), bit(ERROR)
    elseif msg_type == 5 then
        return bit(HELLO_ID), bit(HELLO_ID)
    end
    return nil, nil
end

-- TCP endpoints ("address port") that Stack-Configuration-Data advertised, and TCP
-- conversations already recognised as GIST: later segments of either are GIST even when they
-- do not begin with a common header.
local ma_endpoints = {}
local ma_conversations = {}
-- Addresses and ports a Response named for TLS associations: their payload is opaque.
local tls_endpoints = {}

function gist.init()
    ma_endpoints = {}
    ma_conversations = {}
    tls_endpoints = {}
end

-- Sets the Info column for the first message of a frame and appends for the others.
local function info(pinfo, text)
    if pinfo.private.gist_info == nil then
        pinfo.cols.info:set(text)
        pinfo.private.gist_info = "1"
    else
        pinfo.cols.info:append(" | " .. text)
    end
end

local function dissect_nslp_data(tvb, off, len, pinfo, tree, nslpid, item)
    local r = tvb(off, len)
    local d = nslp_table:get_dissector(nslpid)
    if d ~= nil then
        item:add(f.nslp_data, r)
        -- tvb(...):tvb() needs at least one byte; len >= 1 here.
        d:call(r:tvb(), pinfo, tree)
        return ""
    end
    local data_item = item:add(f.nslp_data, r)
    local text = printable(r)
    if text ~= nil then
        data_item:append_text(" \"" .. text .. "\"")
        if #text > 40 then
            text = text:sub(1, 37) .. "..."
        end
        return "\"" .. text .. "\""
    end
    return len .. " bytes"
end

-- One GIST message starting at `off` (its common header), with `avail` bytes of `tvb` from
-- there. Returns the bytes it took (the message length, or what was there).
local function dissect_message(tvb, off, avail, pinfo, tree, root, opts)
    if avail <= 0 then
        return 0
    end
    if avail < HEADER_LEN then
        local r = tvb(off, avail)
        root:add(f.trailing, r)
        root:add_proto_expert_info(ex.truncated,
            string.format("%d bytes: shorter than the 8-byte common header", avail))
        info(pinfo, "GIST (truncated)")
        return avail
    end
    local words = tvb(off + 2, 2):uint()
    local msg_len = HEADER_LEN + words * 4
    local version = tvb(off, 1):uint()
    local hops = tvb(off + 1, 1):uint()
    local nslpid = tvb(off + 4, 2):uint()
    local msg_type = tvb(off + 6, 1):uint() % 128
    local c_flag = has(tvb(off + 6, 1):uint(), 0x80)
    local fl = tvb(off + 7, 1):uint()
    local s_flag, r_flag, e_flag = has(fl, 0x80), has(fl, 0x40), has(fl, 0x20)

    local len = math.min(msg_len, avail)
    root:set_len(len + (opts.magic and 4 or 0))
    root:append_text(", " .. name_of(msg_types, msg_type, "Type"))

    local hdr = root:add(f.hdr, tvb(off, HEADER_LEN))
    local v_item = hdr:add(f.version, tvb(off, 1))
    hdr:add(f.hops, tvb(off + 1, 1))
    local l_item = hdr:add(f.length, tvb(off + 2, 2))
    l_item:append_text(" (" .. msg_len .. " bytes with the header)")
    local n_item = hdr:add(f.nslpid, tvb(off + 4, 2))
    n_item:append_text(" (" .. nslpid_name(nslpid) .. ")")
    hdr:add(f.c_flag, tvb(off + 6, 1))
    local t_item = hdr:add(f.type, tvb(off + 6, 1))
    local fl_item = hdr:add(f.flags, tvb(off + 7, 1))
    fl_item:add(f.s_flag, tvb(off + 7, 1))
    fl_item:add(f.r_flag, tvb(off + 7, 1))
    fl_item:add(f.e_flag, tvb(off + 7, 1))
    fl_item:add(f.hdr_reserved, tvb(off + 7, 1))
    local flag_text = {}
    if s_flag then flag_text[#flag_text + 1] = "S" end
    if r_flag then flag_text[#flag_text + 1] = "R" end
    if e_flag then flag_text[#flag_text + 1] = "E" end
    if #flag_text > 0 then
        fl_item:append_text(" (" .. table.concat(flag_text, " ") .. ")")
    end
    if c_flag then table.insert(flag_text, 1, "C") end
    hdr:append_text(string.format(": v%d, %s, NSLPID %d, hops %d, %d bytes", version,
        name_of(msg_types, msg_type, "Type"), nslpid, hops, msg_len))

    -- Common Header Parse Errors (A.4.4.1), in the codec's order.
    if version ~= 1 then
        v_item:add_proto_expert_info(ex.header, "Unknown version " .. version)
    end
    if msg_types[msg_type] == nil then
        t_item:add_proto_expert_info(ex.header, "Unknown message type " .. msg_type)
    end
    if msg_len > avail then
        l_item:add_proto_expert_info(ex.truncated,
            string.format("Message Length says %d bytes, only %d present", msg_len, avail))
    end
    if e_flag and msg_type ~= 3 then
        fl_item:add_proto_expert_info(ex.header, "E flag set on a message other than Data")
    end
    if (msg_type == 0 and not r_flag) or
        ((msg_type == 2 or msg_type == 3 or msg_type == 4) and r_flag) then
        fl_item:add_proto_expert_info(ex.header,
            "R flag inconsistent with the message type (Invalid R-flag)")
    end

    local info_text = name_of(msg_types, msg_type, "Type")
    if nslpid ~= 0 then
        info_text = info_text .. " NSLPID=" .. nslpid
    end
    if #flag_text > 0 then
        info_text = info_text .. " [" .. table.concat(flag_text, "") .. "]"
    end
    local info_extra = {}
    local hello_id

    local ctx = { tcp_ports = {}, tls_profiles = {} }
    local allowed, required = object_rules(msg_type)
    local seen = 0
    local stop = off + len
    local pos = off + HEADER_LEN
    local nslp_range
    while pos < stop do
        local left = stop - pos
        if left < 4 then
            local r = tvb(pos, left)
            local item = root:add(f.trailing, r)
            item:add_proto_expert_info(ex.obj_overrun,
                left .. " bytes left: too short for an object header")
            break
        end
        local body_words = tvb(pos + 2, 2):uint() % 4096
        local body_len = body_words * 4
        local obj_len = math.min(4 + body_len, left)
        local item = root:add(f.obj, tvb(pos, obj_len))
        local ab, t = dissect_object_header(tvb, pos, item)
        local body_avail = obj_len - 4
        if 4 + body_len > left then
            item:add_proto_expert_info(ex.obj_overrun,
                string.format("Object body %d bytes, %d left in the message", body_len,
                    left - 4))
        end
        local c = cursor(tvb, pos + 4, body_avail)
        local known = obj_types[t] ~= nil
        if ab == 3 then
            item:add_proto_expert_info(ex.object_rule,
                "Extensibility flags AB=11 (Invalid Extensibility Flags)")
        end
        if not known then
            if ab == 0 then
                item:add_proto_expert_info(ex.object_rule,
                    "Unrecognised object with AB=00: the message is rejected")
            elseif ab ~= 3 then
                item:add_proto_expert_info(ex.unknown_object,
                    "Object type " .. t .. " unknown: " .. (ab == 1 and "dropped" or "forwarded"))
            end
            if body_avail > 0 then
                item:add(f.obj_data, tvb(pos + 4, body_avail))
            end
        else
            if allowed ~= nil and not has(allowed, bit(t)) then
                item:add_proto_expert_info(ex.object_rule,
                    obj_types[t] .. " not valid in a " .. name_of(msg_types, msg_type, "Type")
                    .. " (Invalid Object Type)")
            elseif has(seen, bit(t)) then
                item:add_proto_expert_info(ex.object_rule,
                    "Second " .. obj_types[t] .. " (Duplicate Object)")
            end
            if not has(seen, bit(t)) then
                seen = seen + bit(t)
            end
            local summary
            if t == MRI then
                summary = dissect_mri(c, item)
            elseif t == SESSION_ID then
                local r = c:take(16)
                if r == nil then
                    short(item, c, "the 16-byte Session ID")
                else
                    item:add(f.sid, r)
                    summary = hex(r)
                    check_end(item, c, "Session-ID")
                end
            elseif t == NLI then
                summary = dissect_nli(c, item, ctx)
            elseif t == STACK_PROPOSAL then
                summary = dissect_stack_proposal(c, item)
            elseif t == SCD then
                summary = dissect_scd(c, item, ctx)
            elseif t == QUERY_COOKIE or t == RESPONDER_COOKIE or t == NAT_TRAVERSAL then
                local field = t == QUERY_COOKIE and f.query_cookie or
                    (t == RESPONDER_COOKIE and f.responder_cookie or f.nat_traversal)
                local r = c:rest()
                if r ~= nil then
                    item:add(field, r)
                    summary = hex(r)
                end
            elseif t == NSLP_DATA then
                if body_avail > 0 then
                    nslp_range = { pos + 4, body_avail, item }
                end
            elseif t == ERROR then
                summary = dissect_error_object(c, item, dissect_mri)
                info_extra[#info_extra + 1] = summary
            elseif t == HELLO_ID then
                local r = c:take(4)
                if r == nil then
                    short(item, c, "the Hello-ID")
                else
                    item:add(f.hello_id, r)
                    hello_id = r:uint()
                    summary = string.format("0x%08x", hello_id)
                    check_end(item, c, "Hello-ID")
                end
            end
            if summary ~= nil and summary ~= "" then
                item:append_text(" (" .. summary .. ")")
            end
        end
        pos = pos + obj_len
    end

    if required ~= nil then
        local missing = {}
        for t = 0, 10 do
            if has(required, bit(t)) and not has(seen, bit(t)) then
                missing[#missing + 1] = obj_types[t]
            end
        end
        -- RFC 5971 §5.1: the optional parts nest. Query: [SP SCD]; Response:
        -- [Responder-Cookie [SP SCD]]; Confirm: [Responder-Cookie [SP [SCD]]] (A.4.4.9 Missing
        -- Object covers an SP without its SCD "or vice versa").
        local sp, scd, rc = has(seen, bit(STACK_PROPOSAL)), has(seen, bit(SCD)),
            has(seen, bit(RESPONDER_COOKIE))
        if (msg_type == 0 or msg_type == 1) and sp ~= scd then
            missing[#missing + 1] = scd and obj_types[STACK_PROPOSAL] or obj_types[SCD]
        end
        if msg_type == 2 and scd and not sp then
            missing[#missing + 1] = obj_types[STACK_PROPOSAL]
        end
        if (msg_type == 1 or msg_type == 2) and (sp or scd) and not rc then
            missing[#missing + 1] = obj_types[RESPONDER_COOKIE]
        end
        if #missing > 0 and msg_len <= avail then
            root:add_proto_expert_info(ex.object_rule,
                "Missing " .. table.concat(missing, ", ") .. " (Missing Object)")
        end
    end
    -- A.1: a Response with a Responder-Cookie MUST have R=1.
    if msg_type == 1 and has(seen, bit(RESPONDER_COOKIE)) and not r_flag then
        fl_item:add_proto_expert_info(ex.header,
            "Responder-Cookie without R (Invalid R-flag)")
    end
    -- §5.2.2: an MA-Hello request (R=1) needs a non-zero Hello-ID (Value Not Supported).
    if msg_type == 5 and r_flag and hello_id == 0 then
        root:add_proto_expert_info(ex.bad_value,
            "MA-Hello request with Hello-ID 0 (Value Not Supported)")
    end

    -- A responder's TCP port (§5.7.1): the MA that follows is GIST on that address and port,
    -- or TLS when the port belongs to a profile with Forwards-TLS (§5.7.3).
    if #ctx.tcp_ports > 0 then
        local addr = ctx.nli_addr or tostring(pinfo.src)
        local plain, secure = {}, {}
        for _, pp in ipairs(ctx.tcp_ports) do
            local port, profile = pp[1], pp[2]
            if ctx.tls_profiles[profile] then
                tls_endpoints[addr .. " " .. port] = true
                secure[#secure + 1] = port
            else
                ma_endpoints[addr .. " " .. port] = true
                plain[#plain + 1] = port
            end
        end
        if #plain > 0 then
            info_extra[#info_extra + 1] = "MA TCP port " .. table.concat(plain, ",")
        end
        if #secure > 0 then
            info_extra[#info_extra + 1] = "MA TLS port " .. table.concat(secure, ",")
        end
    end
    if #info_extra > 0 then
        info_text = info_text .. " " .. table.concat(info_extra, " ")
    end
    info(pinfo, info_text)
    -- NSLP-Data last, so an NSLP dissector's column text follows GIST's.
    if nslp_range ~= nil then
        local text = dissect_nslp_data(tvb, nslp_range[1], nslp_range[2], pinfo, tree, nslpid,
            nslp_range[3])
        if text ~= "" then
            pinfo.cols.info:append(" " .. text)
        end
    end
    return len
end

------------------------------------------------------------------------------------------------
-- Transports (RFC 5971 §5.4)
------------------------------------------------------------------------------------------------

-- D-mode: one message per datagram, after the magic number (§5.4.1).
local function dissect_dmode(tvb, pinfo, tree)
    local len = tvb:len()
    if len == 0 then
        return 0
    end
    pinfo.cols.protocol = "GIST"
    local root = tree:add(gist, tvb())
    root:append_text(", D-mode")
    local off = 0
    if len >= 4 and tvb(0, 4):uint() == MAGIC then
        root:add(f.magic, tvb(0, 4))
        off = 4
    else
        root:add_proto_expert_info(ex.no_magic,
            "No magic number 0x4e04bda5: decoding as a bare message (RFC 5971 §5.4.1)")
    end
    local avail = len - off
    if avail == 0 then
        root:add_proto_expert_info(ex.truncated, "Magic number and nothing else")
        info(pinfo, "GIST (truncated)")
        return len
    end
    local took = dissect_message(tvb, off, avail, pinfo, tree, root, { magic = off == 4 })
    if took < avail then
        local r = tvb(off + took, avail - took)
        local item = root:add(f.trailing, r)
        item:add_proto_expert_info(ex.length_mismatch,
            string.format("%d bytes after the message (Incorrect Message Length)", avail - took))
    end
    return len
end

-- C-mode: messages back to back on a stream, framed by the common header's length (§5.4.2),
-- reassembled across segments with TCP's desegment API. Framing trusts the length field only
-- where a message starts with version 1: otherwise the stream is not GIST, or the capture
-- began mid-message, and waiting for a length read from arbitrary bytes would hide the rest
-- of the stream.
local function dissect_cmode(tvb, pinfo, tree)
    local len = tvb:len()
    local off = 0
    while off < len do
        local left = len - off
        local version = tvb(off, 1):uint()
        if version ~= 1 then
            pinfo.cols.protocol = "GIST"
            local root = tree:add(gist, tvb(off, left))
            root:append_text(", C-mode, not at a message boundary")
            root:add(f.trailing, tvb(off, left))
            root:add_proto_expert_info(ex.truncated, string.format(
                "%d bytes do not start a GIST message (version byte %d): no framing",
                left, version))
            info(pinfo, "GIST (continuation or not GIST)")
            return len
        end
        local need = left < HEADER_LEN and DESEGMENT_ONE_MORE_SEGMENT
            or HEADER_LEN + tvb(off + 2, 2):uint() * 4 - left
        if need > 0 and pinfo.can_desegment > 0 then
            pinfo.desegment_offset = off
            pinfo.desegment_len = need
            return len
        end
        pinfo.cols.protocol = "GIST"
        local root = tree:add(gist, tvb(off, left))
        root:append_text(", C-mode")
        off = off + dissect_message(tvb, off, left, pinfo, tree, root, {})
    end
    return len
end

-- Port type of the transport below (epan/address.h): PT_TCP 2, PT_UDP 3.
local PT_TCP = 2

function gist.dissector(tvb, pinfo, tree)
    if pinfo.port_type == PT_TCP then
        return dissect_cmode(tvb, pinfo, tree)
    end
    return dissect_dmode(tvb, pinfo, tree)
end

-- Whether a stream segment begins with a plausible C-mode message: version 1, a known type,
-- reserved flag bits clear, and (when present) a sane first object.
local function looks_like_cmode(tvb)
    local len = tvb:len()
    if len < HEADER_LEN then
        return false
    end
    local words = tvb(2, 2):uint()
    if tvb(0, 1):uint() ~= 1 or tvb(6, 1):uint() % 128 > 5 or tvb(7, 1):uint() % 32 ~= 0
        or words < 2 then
        return false
    end
    if len >= HEADER_LEN + 4 then
        local w = tvb(8, 2):uint()
        local l = tvb(10, 2):uint()
        local ab = math.floor(w / 16384)
        local t = w % 4096
        if math.floor(w / 4096) % 4 ~= 0 or l >= 4096 or ab == 3 or (t > 10 and ab == 0)
            or 1 + l > words then
            return false
        end
    end
    return true
end

local function heur_udp(tvb, pinfo, tree)
    if tvb:len() < 4 + HEADER_LEN or tvb(0, 4):uint() ~= MAGIC or tvb(4, 1):uint() ~= 1 then
        return false
    end
    dissect_dmode(tvb, pinfo, tree)
    return true
end

local function conversation_key(pinfo)
    local a = tostring(pinfo.src) .. " " .. pinfo.src_port
    local b = tostring(pinfo.dst) .. " " .. pinfo.dst_port
    if a < b then
        return a .. "|" .. b
    end
    return b .. "|" .. a
end

local tls_dissector = Dissector.get("tls")

local function heur_tcp(tvb, pinfo, tree)
    if tls_endpoints[tostring(pinfo.src) .. " " .. pinfo.src_port]
        or tls_endpoints[tostring(pinfo.dst) .. " " .. pinfo.dst_port] then
        -- A TLS messaging association: hand it to Wireshark's TLS dissector (GIST inside is
        -- encrypted).
        if tls_dissector ~= nil then
            return tls_dissector:call(tvb, pinfo, tree) > 0
        end
        return false
    end
    local key = conversation_key(pinfo)
    local known = ma_conversations[key]
        or ma_endpoints[tostring(pinfo.src) .. " " .. pinfo.src_port]
        or ma_endpoints[tostring(pinfo.dst) .. " " .. pinfo.dst_port]
    if not known and not looks_like_cmode(tvb) then
        return false
    end
    ma_conversations[key] = true
    dissect_cmode(tvb, pinfo, tree)
    return true
end

------------------------------------------------------------------------------------------------
-- NSIS Ping NSLP (crates/gist/src/nslp/ping.rs)
--
--   0: version (1) | kind (1 request, 2 reply) | hop count (16)
--   4: sequence number (32)
--   8: time the client sent it, ns (64)
--  16: per hop: family (4 or 6) | 3 reserved | address (4 or 16) | timestamp, ns (64)
------------------------------------------------------------------------------------------------

local function ns_text(u64)
    return string.format(" (%.3f ms)", u64:tonumber() / 1e6)
end

function ping.dissector(tvb, pinfo, tree)
    local len = tvb:len()
    local root = tree:add(ping, tvb())
    local c = cursor(tvb, 0, len)
    local function bad(what)
        root:add_proto_expert_info(ex.ping_malformed,
            string.format("Ends before %s (%d bytes left at offset %d)", what, c:left(),
                c:offset()))
        pinfo.cols.info:append(" Ping (malformed)")
        return len
    end
    local ver_r, kind_r, n_r = c:take(1), c:take(1), c:take(2)
    if n_r == nil then
        return bad("the hop count")
    end
    local v_item = root:add(pf.version, ver_r)
    local k_item = root:add(pf.kind, kind_r)
    root:add(pf.hop_count, n_r)
    if ver_r:uint() ~= 1 then
        v_item:add_proto_expert_info(ex.ping_malformed, "Unknown version " .. ver_r:uint())
    end
    local kind = kind_r:uint()
    if ping_kinds[kind] == nil then
        k_item:add_proto_expert_info(ex.ping_malformed, "Unknown kind " .. kind)
    end
    local seq_r = c:take(4)
    local sent_r = c:take(8)
    if sent_r == nil then
        return bad("the sequence number and send time")
    end
    root:add(pf.seq, seq_r)
    root:add(pf.sent_at, sent_r):append_text(ns_text(sent_r:uint64()))
    local path = {}
    for i = 1, n_r:uint() do
        local at = c.pos
        local fam_r = c:take(1)
        if fam_r == nil or not c:skip(3) then
            return bad("hop " .. i)
        end
        local fam = fam_r:uint()
        local alen = fam == 4 and 4 or (fam == 6 and 16 or nil)
        if alen == nil then
            local hop = root:add(pf.hop, tvb(at, c.pos - at))
            hop:add(pf.family, fam_r)
            hop:add_proto_expert_info(ex.ping_malformed, "Unknown address family " .. fam)
            pinfo.cols.info:append(" Ping (malformed)")
            return len
        end
        local addr_r = c:take(alen)
        local ts_r = c:take(8)
        if ts_r == nil then
            return bad("the end of hop " .. i)
        end
        local hop = root:add(pf.hop, tvb(at, c.pos - at))
        hop:add(pf.family, fam_r)
        hop:add(pf.reserved, tvb(at + 1, 3))
        local addr
        if fam == 4 then
            hop:add(pf.addr4, addr_r)
            addr = tostring(addr_r:ipv4())
        else
            hop:add(pf.addr6, addr_r)
            addr = tostring(addr_r:ipv6())
        end
        hop:add(pf.timestamp, ts_r):append_text(ns_text(ts_r:uint64()))
        hop:append_text(" " .. i .. ": " .. addr)
        path[#path + 1] = addr
    end
    local rest = c:rest()
    if rest ~= nil then
        root:add(pf.trailing, rest):add_proto_expert_info(ex.ping_trailing,
            rest:len() .. " bytes after the last hop")
    end
    local text = string.format("Ping %s seq=%d", ping_kinds[kind] or ("kind " .. kind),
        seq_r:uint())
    if #path > 0 then
        text = text .. " path=" .. table.concat(path, ",")
    end
    root:append_text(", " .. text)
    pinfo.cols.info:append(" " .. text)
    return len
end

------------------------------------------------------------------------------------------------
-- Registration
------------------------------------------------------------------------------------------------

local registered_ping_nslpid = gist.prefs.ping_nslpid
nslp_table:add(registered_ping_nslpid, ping)

function gist.prefs_changed()
    if gist.prefs.ping_nslpid ~= registered_ping_nslpid then
        nslp_table:remove(registered_ping_nslpid, ping)
        registered_ping_nslpid = gist.prefs.ping_nslpid
        nslp_table:add(registered_ping_nslpid, ping)
    end
end

DissectorTable.get("udp.port"):add(GIST_PORT, gist)
DissectorTable.get("tcp.port"):add(GIST_PORT, gist)
gist:register_heuristic("udp", heur_udp)
gist:register_heuristic("tcp", heur_tcp)
