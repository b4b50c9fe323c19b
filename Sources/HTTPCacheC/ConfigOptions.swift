import HTTPCache

/// One hc_config's `ServeSettings`, checked by `ServeOption` as set: a bad value fails at hc_config_set
/// (HC_EINVAL), not at hc_open. hc_open copies it: the hc_config may go at once.
struct CConfiguration: Sendable {
    /// The library's defaults; an empty `cache-dir` means "not set" (hc_open needs one).
    var settings = ServeSettings(cacheDirectory: "")
    /// The callback of hc_config_set_log (or stderr) at its level; "log-level" sets the level too.
    var log = LogTarget()

    /// Throws (and changes nothing) when the option is unknown or its value malformed.
    mutating func set(_ option: String, _ value: String) throws(HTTPCacheError) {
        try settings.set(option, value)
        if option == "log-level" { log.minLevel = LogTarget.cLevel(settings.logLevel) }
    }
}
