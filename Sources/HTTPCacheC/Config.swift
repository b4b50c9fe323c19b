// hc_config_*: an hc_config* is an unmanaged, retained ConfigHandle.
import Glibc
import HTTPCache

/// The object behind an hc_config*: `ServeSettings` checked by `ServeOption` as set (a bad value fails at
/// hc_config_set, not at hc_open), which hc_open copies. Used by one thread at a time (the header says so).
final class ConfigHandle: OpaqueHandle {
    /// The library's defaults; an empty `cache-dir` means "not set" (hc_open needs one).
    var settings = ServeSettings(cacheDirectory: "")
    /// The callback of hc_config_set_log (or stderr) at its level; "log-level" sets the level too.
    var log = LogTarget()
    /// The first hc_config_set that failed: a host that ignored its result (an unreadable key file, say)
    /// must not get a cache that runs without the setting, so hc_open refuses it with this error.
    private(set) var failure: HTTPCacheError?
    /// `failure`'s message as a C string, owned here until hc_config_free.
    private(set) var failureText: UnsafeMutablePointer<CChar>?

    deinit { free(failureText) }

    func record(_ error: HTTPCacheError) {
        guard failure == nil else { return }
        failure = error
        failureText = strdup(error.message)
    }
}

@c public func hc_config_new() -> OpaquePointer? {
    ConfigHandle().retainedPointer
}

@c public func hc_config_set(_ config: OpaquePointer?, _ option: UnsafePointer<CChar>?,
                             _ value: UnsafePointer<CChar>?) -> Int32 {
    guard let handle = ConfigHandle.from(config) else { return hcInvalid }
    guard let option, let value else {
        handle.record(HTTPCacheError(.invalidArgument, "hc_config_set: a NULL option or value"))
        return hcInvalid
    }
    let name = String(cString: option)
    do throws(HTTPCacheError) {
        try handle.settings.set(name, String(cString: value))  // a refused value changes nothing
        if name == "log-level" { handle.log.minLevel = LogTarget.cLevel(handle.settings.logLevel) }
        return hcOK
    } catch {
        handle.record(error)
        return error.cCode
    }
}

@c public func hc_config_errmsg(_ config: OpaquePointer?) -> UnsafePointer<CChar>? {
    ConfigHandle.from(config)?.failureText.map { UnsafePointer($0) }
}

@c public func hc_config_set_log(_ config: OpaquePointer?, _ minLevel: Int32, _ function: HCLogFunction?,
                                 _ userdata: UnsafeMutableRawPointer?) {
    ConfigHandle.from(config)?.log = function.map {
        LogTarget(minLevel: min(max(minLevel, 0), 6), function: $0, userdata: userdata)
    } ?? LogTarget()
}

@c public func hc_config_free(_ config: OpaquePointer?) {
    ConfigHandle.release(config)
}
