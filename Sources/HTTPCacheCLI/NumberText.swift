/// `value` rounded to one decimal, e.g. `12.3` (what `%.1f` prints, without Foundation).
func oneDecimal(_ value: Double) -> String {
    guard value.isFinite else { return value.isNaN ? "nan" : (value < 0 ? "-inf" : "inf") }
    let tenths = (abs(value) * 10).rounded()
    let whole = Int64(tenths / 10)
    let digit = Int64(tenths) - whole * 10
    return (value < 0 && tenths > 0 ? "-" : "") + "\(whole).\(digit)"
}

/// "1 resource", "2 resources": a count with its noun, singular for one.
func counted(_ count: some BinaryInteger, _ noun: String, plural: String? = nil) -> String {
    "\(count) \(count == 1 ? noun : plural ?? noun + "s")"
}
