// hc_config_*: an hc_config* is an unmanaged, retained ConfigHandle.

/// The object behind an hc_config*. Used by one thread at a time (the header
/// says so), hence no lock.
final class ConfigHandle {
    var value = CConfiguration()

    static func from(_ pointer: OpaquePointer?) -> ConfigHandle? {
        guard let pointer else { return nil }
        return Unmanaged<ConfigHandle>.fromOpaque(UnsafeRawPointer(pointer)).takeUnretainedValue()
    }
}

@c public func hc_config_new() -> OpaquePointer? {
    OpaquePointer(Unmanaged.passRetained(ConfigHandle()).toOpaque())
}

@c public func hc_config_set(_ config: OpaquePointer?, _ option: UnsafePointer<CChar>?,
                             _ value: UnsafePointer<CChar>?) -> Int32 {
    guard let handle = ConfigHandle.from(config), let option, let value else { return hcInvalid }
    return handle.value.set(String(cString: option), String(cString: value)) ? hcOK : hcInvalid
}

@c public func hc_config_set_log(_ config: OpaquePointer?, _ minLevel: Int32, _ function: HCLogFunction?,
                                 _ userdata: UnsafeMutableRawPointer?) {
    guard let handle = ConfigHandle.from(config) else { return }
    guard let function else {
        handle.value.log = LogTarget()
        return
    }
    handle.value.log = LogTarget(minLevel: min(max(minLevel, 0), 6), function: function, userdata: userdata)
}

@c public func hc_config_free(_ config: OpaquePointer?) {
    guard let config else { return }
    Unmanaged<ConfigHandle>.fromOpaque(UnsafeRawPointer(config)).release()
}
