// Common Media Client Data (CTA-5004): `key[=value]` members (a key alone true) in a `CMCD=`
// query argument or the `CMCD-*` fields. Telemetry never fails a request: unknown or mistyped
// keys are dropped (and counted), the rest is used.

/// The keys of CTA-5004 version 1.
package enum CMCDKey: String, CaseIterable, Sendable {
    // CMCD-Request
    case bufferLength = "bl"
    case deadline = "dl"
    case measuredThroughput = "mtp"
    case nextObject = "nor"
    case nextRange = "nrr"
    case startup = "su"
    // CMCD-Object
    case bitrate = "br"
    case duration = "d"
    case objectType = "ot"
    case topBitrate = "tb"
    // CMCD-Status
    case bufferStarvation = "bs"
    case requestedThroughput = "rtp"
    // CMCD-Session
    case contentID = "cid"
    case playbackRate = "pr"
    case streamingFormat = "sf"
    case sessionID = "sid"
    case streamType = "st"
    case version = "v"

    package var type: CMCDType {
        switch self {
        case .bufferLength, .deadline, .measuredThroughput, .bitrate, .duration, .topBitrate, .requestedThroughput,
             .version:
            return .integer
        case .playbackRate: return .decimal
        case .startup, .bufferStarvation: return .boolean
        case .contentID, .sessionID: return .string(maxLength: 64)  // the spec bounds identifiers
        case .nextObject, .nextRange: return .string(maxLength: 2048)
        case .objectType: return .token(["m", "a", "v", "av", "i", "c", "tt", "k", "o"])
        case .streamingFormat: return .token(["d", "h", "s", "o"])
        case .streamType: return .token(["v", "l"])
        }
    }
}

package enum CMCDType: Sendable, Equatable {
    case integer  // at most 15 digits (`bl=21300`)
    case decimal  // at most three fraction digits (`pr=1.25`)
    case boolean  // a key alone is true; `=false` (or `?0`) false
    case string(maxLength: Int)  // double-quoted, with `\"` and `\\` escapes
    case token(Set<String>)  // one of a fixed set of unquoted tokens
}

package enum CMCDValue: Sendable, Equatable {
    case integer(Int64)
    case decimal(Double)
    case boolean(Bool)
    case string(String)
    case token(String)
}

/// The CMCD of one request: the keys that parsed, and how many were dropped.
package struct CMCD: Sendable, Equatable {
    package private(set) var values: [CMCDKey: CMCDValue] = [:]
    /// Dropped: unknown keys (custom ones carry a "-" and are not counted), mistyped values,
    /// a payload past `maxPayloadBytes`, a broken member.
    package internal(set) var malformed = 0

    /// Query value and fields together; longer is dropped whole, counted as malformed.
    package static let maxPayloadBytes = 4096
    package static let queryName = "CMCD"
    package static let fieldNames = ["cmcd-request", "cmcd-object", "cmcd-status", "cmcd-session"]

    package init() {}

    /// One payload, already percent-decoded.
    package static func parse(payload: String) -> CMCD {
        var result = CMCD()
        let bytes = Array(payload.utf8)
        if bytes.count > maxPayloadBytes { result.malformed = 1 } else { result.read(bytes[...]) }
        return result
    }

    package subscript(key: CMCDKey) -> CMCDValue? { values[key] }

    package func integer(_ key: CMCDKey) -> Int64? {
        if case .integer(let value)? = values[key] { return value }
        return nil
    }

    package func string(_ key: CMCDKey) -> String? {
        switch values[key] {
        case .string(let value)?, .token(let value)?: return value
        default: return nil
        }
    }

    package func flag(_ key: CMCDKey) -> Bool {
        if case .boolean(let value)? = values[key] { return value }
        return false
    }

    mutating func read(_ bytes: ArraySlice<UInt8>) {
        var rest = bytes
        while true {
            rest = rest.drop { $0 == 0x20 || $0 == 0x09 }
            guard !rest.isEmpty else { return }
            let keyEnd = rest.firstIndex { !Self.isKeyByte($0) } ?? rest.endIndex
            let key = rest[rest.startIndex..<keyEnd]
            rest = rest[keyEnd...]
            var value: ArraySlice<UInt8>?
            if rest.first == UInt8(ascii: "=") { (value, rest) = Self.member(rest.dropFirst()) }
            rest = rest.drop { $0 == 0x20 || $0 == 0x09 }
            if key.isEmpty || !(rest.isEmpty || rest.first == UInt8(ascii: ",")) {
                malformed += 1
                rest = Self.member(rest).1  // to the next comma outside a string
            } else {
                store(key: key, value: value)
            }
            guard rest.first == UInt8(ascii: ",") else { return }
            rest = rest.dropFirst()
        }
    }

    /// A value up to the next comma not inside a quoted string, and what follows it.
    private static func member(_ bytes: ArraySlice<UInt8>) -> (ArraySlice<UInt8>, ArraySlice<UInt8>) {
        var index = bytes.startIndex
        var quoted = false
        while index < bytes.endIndex {
            let c = bytes[index]
            if quoted {
                if c == UInt8(ascii: "\\") { index = min(bytes.endIndex, index + 2); continue }
                if c == UInt8(ascii: "\"") { quoted = false }
            } else if c == UInt8(ascii: "\"") {
                quoted = true
            } else if c == UInt8(ascii: ",") {
                break
            }
            index += 1
        }
        var value = bytes[bytes.startIndex..<index]
        while let last = value.last, last == 0x20 || last == 0x09 { value = value.dropLast() }
        return (value, bytes[index...])
    }

    private mutating func store(key keyBytes: ArraySlice<UInt8>, value: ArraySlice<UInt8>?) {
        let name = String(decoding: keyBytes, as: UTF8.self)
        guard let key = CMCDKey(rawValue: name) else {
            // Custom keys ("com.example-key") are the players' own: ignored, not wrong.
            if !keyBytes.contains(UInt8(ascii: "-")) { malformed += 1 }
            return
        }
        if let parsed = Self.value(value, as: key.type) { values[key] = parsed } else { malformed += 1 }
    }

    static func value(_ raw: ArraySlice<UInt8>?, as type: CMCDType) -> CMCDValue? {
        switch type {
        case .boolean:
            guard let raw else { return .boolean(true) }
            switch String(decoding: raw, as: UTF8.self) {
            case "?1", "true": return .boolean(true)
            case "?0", "false": return .boolean(false)
            default: return nil
            }
        case .integer: return raw.flatMap(integer).map(CMCDValue.integer)
        case .decimal: return raw.flatMap(decimal).map(CMCDValue.decimal)
        case .string(let maxLength):
            guard let raw, let text = quoted(raw), text.count <= maxLength else { return nil }
            return .string(text)
        case .token(let allowed):
            guard let raw else { return nil }
            let text = String(decoding: raw, as: UTF8.self)
            return allowed.contains(text) ? .token(text) : nil
        }
    }

    private static func integer(_ raw: ArraySlice<UInt8>) -> Int64? {
        var digits = raw
        let negative = digits.first == UInt8(ascii: "-")
        if negative { digits = digits.dropFirst() }
        guard (1...15).contains(digits.count), digits.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else { return nil }
        let magnitude = digits.reduce(Int64(0)) { $0 * 10 + Int64($1 - 0x30) }
        return negative ? -magnitude : magnitude
    }

    /// 1 to 12 integer digits, optionally "." and 1 to 3 digits.
    private static func decimal(_ raw: ArraySlice<UInt8>) -> Double? {
        let parts = raw.split(separator: UInt8(ascii: "."), maxSplits: 1, omittingEmptySubsequences: false)
        guard let whole = parts.first, let integral = integer(whole), whole.count <= 13 else { return nil }
        guard parts.count == 2 else { return Double(integral) }
        let fraction = parts[1]
        guard (1...3).contains(fraction.count), fraction.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else { return nil }
        return Double(String(decoding: raw, as: UTF8.self))
    }

    /// Printable ASCII between quotes, `\"` and `\\` escaped.
    private static func quoted(_ raw: ArraySlice<UInt8>) -> String? {
        guard raw.count >= 2, raw.first == UInt8(ascii: "\""), raw.last == UInt8(ascii: "\"") else { return nil }
        var out: [UInt8] = []
        var index = raw.startIndex + 1
        let end = raw.endIndex - 1
        while index < end {
            let c = raw[index]
            if c == UInt8(ascii: "\\") {
                guard index + 1 < end, raw[index + 1] == UInt8(ascii: "\"") || raw[index + 1] == UInt8(ascii: "\\") else {
                    return nil
                }
                out.append(raw[index + 1])
                index += 2
                continue
            }
            guard c >= 0x20 && c < 0x7F, c != UInt8(ascii: "\"") else { return nil }
            out.append(c)
            index += 1
        }
        return String(decoding: out, as: UTF8.self)
    }

    private static func isKeyByte(_ c: UInt8) -> Bool {
        (c >= 0x61 && c <= 0x7A) || (c >= 0x30 && c <= 0x39) || c == UInt8(ascii: "-") || c == UInt8(ascii: ".")
            || c == UInt8(ascii: "_") || c == UInt8(ascii: "*") || (c >= 0x41 && c <= 0x5A)
    }
}
