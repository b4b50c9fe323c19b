// The C API's result codes: HTTPCacheError.Code owns the HC_E* numbers and texts; this maps them to C.
import HTTPCache

/// HC_OK: the one C result that is not an HTTPCacheError.Code.
let hcOK: Int32 = 0

extension HTTPCacheError {
    var cCode: Int32 { code.rawValue }
}

/// HC_EINVAL, for arguments the C layer rejects before calling the engine.
let hcInvalid: Int32 = HTTPCacheError.Code.invalidArgument.rawValue

/// Runs `body` and returns HC_OK, or the code of the error it threw.
func cResult(_ body: () throws(HTTPCacheError) -> Void) -> Int32 {
    do throws(HTTPCacheError) {
        try body()
        return hcOK
    } catch {
        return error.cCode
    }
}

@c public func hc_strerror(_ code: Int32) -> UnsafePointer<CChar> {
    if code == hcOK { return StaticString("success").cString }
    let text: StaticString = HTTPCacheError.Code(rawValue: code)?.staticText ?? "unknown error"
    return text.cString
}
