/// IMF-fixdate (RFC 9110 §5.6.7) by arithmetic, not gmtime_r: no libc, no locale, the same
/// everywhere.
package enum HTTPDate {
    private static let dayNames: [StaticString] = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
    private static let monthNames: [StaticString] = ["Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                                     "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]

    /// Clamped to years 1970...9999, what four digits hold.
    package static func string(epochSeconds: Int) -> String {
        let t = min(max(epochSeconds, 0), 253_402_300_799)
        let days = t / 86_400
        let secs = t % 86_400
        let weekday = (days + 4) % 7 // 1970-01-01 was a Thursday

        // Days-to-civil over 400-year eras from 0000-03-01.
        let z = days + 719_468
        let era = z / 146_097
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let day = doy - (153 * mp + 2) / 5 + 1
        let month = mp < 10 ? mp + 3 : mp - 9
        let year = yoe + era * 400 + (month <= 2 ? 1 : 0)

        var out: [UInt8] = []
        out.reserveCapacity(29)
        func name(_ s: StaticString) { s.withUTF8Buffer { out.append(contentsOf: $0) } }
        func two(_ v: Int) {
            out.append(UInt8(truncatingIfNeeded: 0x30 + v / 10))
            out.append(UInt8(truncatingIfNeeded: 0x30 + v % 10))
        }
        name(dayNames[weekday])
        out.append(UInt8(ascii: ",")); out.append(ASCII.sp)
        two(day); out.append(ASCII.sp)
        name(monthNames[month - 1]); out.append(ASCII.sp)
        two(year / 100); two(year % 100); out.append(ASCII.sp)
        two(secs / 3600); out.append(ASCII.colon)
        two(secs / 60 % 60); out.append(ASCII.colon)
        two(secs % 60)
        out.append(contentsOf: " GMT".utf8)
        return String(decoding: out, as: UTF8.self)
    }
}
