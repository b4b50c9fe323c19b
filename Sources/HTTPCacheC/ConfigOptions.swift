import HTTPCache

/// The options of one hc_config: `ServeSettings`, set by the names of
/// `ServeOption.all` and checked there as they are set, so that a bad value
/// fails at hc_config_set (HC_EINVAL) rather than later at hc_open.
/// A value: hc_open copies it, and the hc_config may be freed at once.
struct CConfiguration: Sendable {
    /// The library's defaults; an empty `cache-dir` means "not set" (hc_open needs one).
    var settings = ServeSettings(cacheDirectory: "")
    /// Where log lines go: the callback of hc_config_set_log (or stderr) at
    /// its level; "log-level" sets the level as well.
    var log = LogTarget()

    /// Applies one option; throws (and changes nothing) when the option is
    /// unknown or its value malformed, saying which and why.
    mutating func set(_ option: String, _ value: String) throws(HTTPCacheError) {
        try settings.set(option, value)
        if option == "log-level" { log.minLevel = LogTarget.cLevel(settings.logLevel) }
    }
}
