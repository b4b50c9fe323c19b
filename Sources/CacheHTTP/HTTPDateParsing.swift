extension HTTPDate {
    /// An HTTP-date (RFC 9110 §5.6.7) in all three formats recipients must accept: IMF-fixdate
    /// ("Sun, 06 Nov 1994 08:49:37 GMT"), RFC 850 ("Sunday, 06-Nov-94 08:49:37 GMT"), asctime
    /// ("Sun Nov  6 08:49:37 1994"). Surrounding OWS ignored, day names unchecked (§5.6.7
    /// allows it), any case (RFC 9111 §4.2). Two-digit years 70-99 are 19xx, else 20xx: no clock.
    package static func epochSeconds(_ value: String) -> Int? {
        var scanner = DateScanner(b: Array(trimmedOWS(value).utf8))
        guard let dayName = scanner.letters(), dayName.count >= 3 else { return nil }
        if scanner.take(UInt8(ascii: ",")) {
            guard scanner.take(ASCII.sp) else { return nil }
            guard let day = scanner.digits(1...2) else { return nil }
            if scanner.take(UInt8(ascii: "-")) {
                // RFC 850: DD-Mon-YY
                guard let month = scanner.month(), scanner.take(UInt8(ascii: "-")),
                      let yy = scanner.digits(2...2) else { return nil }
                return scanner.timeAndGMT(year: yy < 70 ? 2000 + yy : 1900 + yy, month: month, day: day)
            }
            // IMF-fixdate: DD Mon YYYY
            guard scanner.take(ASCII.sp),
                  let month = scanner.month(), scanner.take(ASCII.sp),
                  let year = scanner.digits(4...4) else { return nil }
            return scanner.timeAndGMT(year: year, month: month, day: day)
        }
        // asctime: Mon DD HH:MM:SS YYYY, DD space-padded.
        guard dayName.count == 3, scanner.take(ASCII.sp), let month = scanner.month(),
              scanner.take(ASCII.sp) else { return nil }
        _ = scanner.take(ASCII.sp)
        guard let day = scanner.digits(1...2), scanner.take(ASCII.sp),
              let secs = scanner.time(), scanner.take(ASCII.sp),
              let year = scanner.digits(4...4), scanner.atEnd else { return nil }
        return epoch(year: year, month: month, day: day, seconds: secs)
    }

    /// Nil for impossible dates.
    static func epoch(year: Int, month: Int, day: Int, seconds: Int) -> Int? {
        let leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0
        guard (1...12).contains(month) else { return nil }
        let length = month == 2 ? (leap ? 29 : 28) : (month == 4 || month == 6 || month == 9 || month == 11 ? 30 : 31)
        guard (1...length).contains(day) else { return nil }
        return days(year: year, month: month, day: day) * 86_400 + seconds
    }

    /// Days from 1970-01-01 to a proleptic Gregorian date (not checked): days-from-civil over
    /// 400-year eras from 0000-03-01, the inverse of `string(epochSeconds:)`'s conversion.
    static func days(year: Int, month: Int, day: Int) -> Int {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let doy = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        return era * 146_097 + doe - 719_468
    }
}

/// Every method consumes only on success.
private struct DateScanner {
    let b: [UInt8]
    var i = 0

    var atEnd: Bool { i == b.count }

    mutating func take(_ byte: UInt8) -> Bool {
        guard i < b.count, b[i] == byte else { return false }
        i += 1
        return true
    }

    mutating func letters() -> ArraySlice<UInt8>? {
        let start = i
        while i < b.count, (ASCII.lower(b[i]) &- 0x61) < 26 { i += 1 }
        return i > start ? b[start..<i] : nil
    }

    mutating func digits(_ allowed: ClosedRange<Int>) -> Int? {
        let start = i
        var v = 0
        while i < b.count, ASCII.isDigit(b[i]), i - start < allowed.upperBound {
            v = v * 10 + Int(b[i] &- 0x30)
            i += 1
        }
        guard allowed.contains(i - start), i == b.count || !ASCII.isDigit(b[i]) else {
            i = start
            return nil
        }
        return v
    }

    /// Month names are case-sensitive in the grammar; accept any case anyway.
    mutating func month() -> Int? {
        guard i + 3 <= b.count else { return nil }
        // The three letters, lowercased, as one number: no string per date.
        let word = UInt32(ASCII.lower(b[i])) << 16 | UInt32(ASCII.lower(b[i + 1])) << 8 | UInt32(ASCII.lower(b[i + 2]))
        guard let m = Self.months.firstIndex(of: word) else { return nil }
        i += 3
        return m + 1
    }

    /// "jan" … "dec", packed as in `month()`.
    private static let months: [UInt32] = [0x6a616e, 0x666562, 0x6d6172, 0x617072, 0x6d6179, 0x6a756e, 0x6a756c, 0x617567, 0x736570, 0x6f6374, 0x6e6f76, 0x646563]

    /// Seconds into the day; a leap second 60 reads as 59.
    mutating func time() -> Int? {
        guard let h = digits(2...2), h < 24, take(ASCII.colon),
              let m = digits(2...2), m < 60, take(ASCII.colon),
              let s = digits(2...2), s <= 60 else { return nil }
        return h * 3600 + m * 60 + min(s, 59)
    }

    mutating func timeAndGMT(year: Int, month: Int, day: Int) -> Int? {
        guard take(ASCII.sp), let secs = time(), take(ASCII.sp),
              b.count - i == 3, b[i...].lazy.map(ASCII.lower).elementsEqual("gmt".utf8) else { return nil }
        return HTTPDate.epoch(year: year, month: month, day: day, seconds: secs)
    }
}
