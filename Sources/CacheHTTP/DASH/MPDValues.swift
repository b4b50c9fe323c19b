extension DASH {
    /// An xs:duration ("PT1H2M3.5S", "P1DT2H"); years and months count as 365 and 30 days.
    package static func seconds(ofDuration text: String) -> Double? {
        var s = Substring(text.trimmingBlanks)
        var sign = 1.0
        if s.hasPrefix("-") { sign = -1; s = s.dropFirst() }
        guard s.hasPrefix("P") else { return nil }
        s = s.dropFirst()
        var total = 0.0, inTime = false, number = "", any = false
        for c in s {
            if c == "T" { inTime = true; continue }
            if c.isNumber || c == "." { number.append(c); continue }
            guard let value = Double(number) else { return nil }
            number = ""
            any = true
            switch (c, inTime) {
            case ("Y", false): total += value * 365 * 86400
            case ("M", false): total += value * 30 * 86400
            case ("W", false): total += value * 7 * 86400
            case ("D", false): total += value * 86400
            case ("H", true): total += value * 3600
            case ("M", true): total += value * 60
            case ("S", true): total += value
            default: return nil
            }
        }
        guard number.isEmpty, any else { return nil }
        return sign * total
    }

    /// An xs:dateTime ("2026-11-27T10:00:00Z"; fractions, offsets; none means UTC).
    package static func seconds(ofDateTime text: String) -> Double? {
        let u = Array(text.trimmingBlanks.utf8)
        guard u.count >= 19, u[4] == UInt8(ascii: "-"), u[7] == UInt8(ascii: "-"), u[10] == UInt8(ascii: "T"),
              u[13] == UInt8(ascii: ":"), u[16] == UInt8(ascii: ":") else { return nil }
        func int(_ r: Range<Int>) -> Int? { Int(String(decoding: u[r], as: UTF8.self)) }
        guard let year = int(0..<4), let month = int(5..<7), let day = int(8..<10), let hour = int(11..<13),
              let minute = int(14..<16), let second = int(17..<19) else { return nil }
        var i = 19, fraction = 0.0
        if i < u.count, u[i] == UInt8(ascii: ".") {
            let start = i
            i += 1
            while i < u.count, ASCII.isDigit(u[i]) { i += 1 }
            fraction = Double("0" + String(decoding: u[start..<i], as: UTF8.self)) ?? 0
        }
        var offset = 0
        if i < u.count {
            if u[i] == UInt8(ascii: "Z") {
                i += 1
            } else if u[i] == UInt8(ascii: "+") || u[i] == UInt8(ascii: "-"), i + 6 <= u.count,
                      let h = int((i + 1)..<(i + 3)), let m = int((i + 4)..<(i + 6)) {
                offset = (h * 3600 + m * 60) * (u[i] == UInt8(ascii: "+") ? 1 : -1)
                i += 6
            } else {
                return nil
            }
        }
        guard i == u.count else { return nil }
        let days = HTTPDate.days(year: year, month: month, day: day)
        return Double(days * 86400 + hour * 3600 + minute * 60 + second - offset) + fraction
    }

    /// The largest time, number or offset here: exact in a Double, far from Int64 overflow.
    package static let valueLimit: Int64 = 1 << 53

    /// Finite and above 0.
    static func positive(_ text: String?) -> Double? {
        guard let text, let value = Double(text.trimmingBlanks), value.isFinite, value > 0 else { return nil }
        return value
    }

    static func count(_ text: String?) -> Int64? {
        guard let text, let value = Int64(text.trimmingBlanks), value >= 0, value <= valueLimit else { return nil }
        return value
    }

    /// Toward 0, held to ±`valueLimit`; NaN: 0.
    static func clamped(_ x: Double) -> Int64 {
        guard !x.isNaN else { return 0 }
        return Int64(max(-Double(valueLimit), min(Double(valueLimit), x)))
    }

    /// "FIRST-LAST" (inclusive).
    package static func byteRange(_ text: String) -> Range<Int64>? {
        let parts = text.trimmingBlanks.split(separator: "-", omittingEmptySubsequences: false)
        guard parts.count == 2, let first = Int64(parts[0]), let last = Int64(parts[1]),
              first >= 0, last >= first, last < valueLimit else { return nil }
        return first..<(last + 1)
    }

    /// Identifiers filled in (ISO/IEC 23009-1 5.3.9.4.4), `%0Nd` widths too; nil when
    /// malformed or one has no value here (`$SubNumber$`, `$Number$` of an initialization).
    package static func fill(template: String, representationID: String, bandwidth: Int,
                             number: Int64? = nil, time: Int64? = nil) -> String? {
        var out = ""
        var rest = Substring(template)
        while let open = rest.firstIndex(of: "$") {
            out += rest[..<open]
            let afterOpen = rest.index(after: open)
            guard let close = rest[afterOpen...].firstIndex(of: "$") else { return nil }
            let identifier = rest[afterOpen..<close]
            rest = rest[rest.index(after: close)...]
            if identifier.isEmpty { out += "$"; continue }
            if identifier == "RepresentationID" { out += representationID; continue }
            let name = identifier.prefix { $0 != "%" }
            let format = identifier.dropFirst(name.count)
            let value: Int64?
            switch name {
            case "Number": value = number
            case "Time": value = time
            case "Bandwidth": value = Int64(bandwidth)
            default: return nil
            }
            guard let value else { return nil }
            var digits = String(value)
            if !format.isEmpty {
                guard format.hasPrefix("%"), format.hasSuffix("d") else { return nil }
                let width = format.dropFirst().dropLast()
                guard width.isEmpty || (width.hasPrefix("0") && Int(width.dropFirst()) != nil) || Int(width) != nil
                else { return nil }
                let n = Int(width.drop { $0 == "0" }) ?? 0
                guard n <= 32 else { return nil }
                if digits.count < n { digits = String(repeating: "0", count: n - digits.count) + digits }
            }
            out += digits
        }
        return out + rest
    }
}

extension String {
    /// Without XML white space at either end.
    var trimmingBlanks: String {
        let u = utf8
        guard let first = u.firstIndex(where: { !XMLText.isBlank($0) }),
              let last = u.lastIndex(where: { !XMLText.isBlank($0) }) else { return "" }
        return String(self[first...last])
    }
}
