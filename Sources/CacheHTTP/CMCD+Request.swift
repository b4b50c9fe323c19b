// CMCD in a request (the `CMCD` query argument, the `CMCD-*` fields), found cheaply first:
// every request asks, most carry none.

import Glibc

extension CMCD {
    /// A `CMCD=` in the target or a `CMCD-` field, by comparing bytes only (every request, hits
    /// included, asks).
    package static func mayBePresent(target: String, headers: HTTPHeaders) -> Bool {
        var bytes = target  // shares the storage: withUTF8 copies only a bridged string
        if bytes.withUTF8(hasQueryName) { return true }
        for field in headers.fields where isFieldName(field.name) { return true }
        return false
    }

    /// From the target's `CMCD` query argument and the CMCD fields; nil when none.
    package static func parse(target: String, headers: HTTPHeaders) -> CMCD? {
        let query = queryValue(in: target)
        let fields = headers.fields.filter { isFieldName($0.name) }
        guard query != nil || !fields.isEmpty else { return nil }
        var result = CMCD()
        // Decoding only shrinks: a payload far too long is dropped before any work.
        let encodedSize = fields.reduce(query?.count ?? 0) { $0 + $1.value.utf8.count }
        let decodedQuery = encodedSize <= 3 * maxPayloadBytes ? query.map(percentDecoded) : nil
        let size = fields.reduce(decodedQuery?.count ?? 0) { $0 + $1.value.utf8.count }
        guard encodedSize <= 3 * maxPayloadBytes, size <= maxPayloadBytes else {
            result.malformed = 1
            return result
        }
        if let decodedQuery { result.read(decodedQuery[...]) }
        for field in fields { result.read(Array(field.value.utf8)[...]) }
        return result
    }

    /// One of the four, any case.
    package static func isFieldName(_ name: String) -> Bool {
        let u = name.utf8
        // The first byte decides for almost every field of a request.
        guard let first = u.first, first | 0x20 == UInt8(ascii: "c"), u.count > 5 else { return false }
        return fieldNames.contains { ASCII.equalsIgnoringCase($0, name) }
    }

    /// `CMCD=` right after `?` or `&`, past the first `?`.
    private static func hasQueryName(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        guard let base = bytes.baseAddress, let mark = memchr(base, Int32(UInt8(ascii: "?")), bytes.count) else {
            return false
        }
        var index = UnsafeRawPointer(mark).assumingMemoryBound(to: UInt8.self) - base + 1
        while index + 5 <= bytes.count {
            if bytes[index] == UInt8(ascii: "C"), bytes[index + 1] == UInt8(ascii: "M"), bytes[index + 2] == UInt8(ascii: "C"),
               bytes[index + 3] == UInt8(ascii: "D"), bytes[index + 4] == UInt8(ascii: "="),
               bytes[index - 1] == UInt8(ascii: "?") || bytes[index - 1] == UInt8(ascii: "&") {
                return true
            }
            index += 1
        }
        return false
    }

    /// The first `CMCD` query argument, still percent-encoded.
    static func queryValue(in target: String) -> [UInt8]? {
        let bytes = Array(target.utf8)
        guard let question = bytes.firstIndex(of: UInt8(ascii: "?")) else { return nil }
        let end = bytes[question...].firstIndex(of: UInt8(ascii: "#")) ?? bytes.endIndex
        for pair in bytes[(question + 1)..<end].split(separator: UInt8(ascii: "&")) {
            let name = pair.prefix { $0 != UInt8(ascii: "=") }
            guard name.elementsEqual(queryName.utf8) else { continue }
            return Array(pair.dropFirst(name.count + 1))
        }
        return nil
    }

    /// `url` with the `CMCD` argument a player appended to a `/p/` proxy URL (a query decoding
    /// ignores), so a miss carries it to the origin; nil for none (`/t/` keeps its query already).
    package static func carried(from proxyTarget: String, to url: String) -> String? {
        guard proxyTarget.hasBytePrefix("/p/"), let value = queryValue(in: proxyTarget),
              queryValue(in: url) == nil else { return nil }
        let hash = url.utf8.firstIndex(of: UInt8(ascii: "#")) ?? url.endIndex
        let base = String(url[..<hash]), fragment = String(url[hash...])
        let separator = base.utf8.contains(UInt8(ascii: "?")) ? "&" : "?"
        return base + separator + queryName + "=" + String(decoding: value, as: UTF8.self) + fragment
    }

    /// An invalid escape stays as it is.
    static func percentDecoded(_ bytes: [UInt8]) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count)
        var index = 0
        while index < bytes.count {
            if bytes[index] == UInt8(ascii: "%"), index + 2 < bytes.count,
               let high = ASCII.hexValue(bytes[index + 1]), let low = ASCII.hexValue(bytes[index + 2]) {
                out.append(high << 4 | low)
                index += 3
            } else {
                out.append(bytes[index])
                index += 1
            }
        }
        return out
    }
}
