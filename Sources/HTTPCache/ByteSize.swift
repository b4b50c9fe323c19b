/// Parses sizes such as `500MB`, `1.5GiB` or `1048576`: K, M, G, T (B optional) are powers of 1000, KiB, MiB,
/// GiB, TiB of 1024; case-insensitive, spaces allowed between number and unit.
public enum ByteSize {
    public static func parse(_ text: String) -> Int64? {
        let trimmed = text[...].trimming(" ")
        let number = trimmed.prefix { $0.isNumber || $0 == "." }
        let unit = trimmed.dropFirst(number.count).trimming(" ").lowercased()
        guard !number.isEmpty, let value = Double(number), value >= 0 else { return nil }
        let multipliers: [String: Double] = [
            "": 1, "b": 1,
            "k": 1e3, "kb": 1e3, "m": 1e6, "mb": 1e6, "g": 1e9, "gb": 1e9, "t": 1e12, "tb": 1e12,
            "kib": 1024, "mib": 1_048_576, "gib": 1_073_741_824, "tib": 1_099_511_627_776,
        ]
        guard let multiplier = multipliers[unit] else { return nil }
        let bytes = (value * multiplier).rounded()
        guard bytes < 9.2e18 else { return nil }
        return Int64(bytes)
    }
}

extension Substring {
    /// Without the characters of `blanks` at either end.
    func trimming(_ blanks: String) -> Substring {
        let start = drop { blanks.contains($0) }
        return start.dropLast(start.reversed().prefix { blanks.contains($0) }.count)
    }
}
