/// hc_log_fn of include/httpcache.h.
public typealias HCLogFunction = @convention(c) (UnsafeMutableRawPointer?, Int32, UnsafePointer<CChar>?) -> Void

/// Where the library's messages go: the host's callback at `minLevel` and
/// above, or (without one) stderr at warning and above.
///
/// `@unchecked Sendable`: the header requires the callback and its userdata
/// to be usable from any library thread, concurrently.
struct LogTarget: @unchecked Sendable {
    /// 0 trace … 6 critical, as swift-log's `Logger.Level` cases in order.
    var minLevel: Int32 = LogTarget.warning
    var function: HCLogFunction?
    var userdata: UnsafeMutableRawPointer?

    static let warning: Int32 = 4
    static let names = ["trace", "debug", "info", "notice", "warning", "error", "critical"]

    static func level(named name: String) -> Int32? {
        names.firstIndex(of: name.lowercased()).map(Int32.init)
    }
}
