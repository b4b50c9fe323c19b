// hc_reader_*: over a CacheReader, which does the work; this file converts arguments, positions and codes.
import Glibc
import HTTPCache
import CacheIO

/// `hc_content_info` of include/httpcache.h. `@c` cannot take a Swift struct, so hc_reader_info binds
/// a raw pointer to this: the same three fields in order, laid out with C's alignment (0, 8, 16).
struct HCContentInfo {
    var totalLength: Int64
    var contentType: UnsafePointer<CChar>?
    var byteRanges: Int32
}

/// One C reader, with the content-type strings hc_reader_info handed out (valid until hc_reader_close).
final class ReaderHandle: CacheDependent, OpaqueHandle, Sendable {
    let reader: CacheReader
    private let dependents: Dependents
    /// Every content type given out so far (normally one); freed in deinit.
    private let contentTypes = Locked<[(text: String, copy: UnsafeMutablePointer<CChar>)]>([])

    init(reader: CacheReader, dependents: Dependents) {
        self.reader = reader
        self.dependents = dependents
    }

    deinit {
        contentTypes.withLock { $0.forEach { free($0.copy) } }
    }

    /// The C string for `contentType` ("" for none), kept until the handle goes.
    func cString(_ contentType: String?) -> UnsafePointer<CChar> {
        guard let contentType else { return StaticString("").cString }
        return contentTypes.withLock { kept in
            if let last = kept.last, last.text == contentType { return UnsafePointer(last.copy) }
            let copy = strdup(contentType)!
            kept.append((contentType, copy))
            return UnsafePointer(copy)
        }
    }

    /// C positions count from the opened offset, the Swift reader's from the resource's start.
    func absolute(_ position: Int64) -> Int64? {
        let (sum, overflow) = reader.offset.addingReportingOverflow(position)
        return overflow ? nil : sum
    }

    /// hc_close: blocked and later calls return HC_ECLOSED (a canceled reader keeps HC_ECANCELED).
    func cacheClosing() { reader.close() }

    /// hc_reader_close: cancel first, as the header says, then release.
    func close() {
        reader.cancel()
        reader.close()
        dependents.remove(self)
    }
}

/// `timeout_ms` as the Swift reader takes it: < 0 forever (nil), 0 polls, else seconds.
private func seconds(_ timeoutMilliseconds: Int32) -> Double? {
    timeoutMilliseconds < 0 ? nil : Double(timeoutMilliseconds) / 1000
}

@c public func hc_reader_open(_ cache: OpaquePointer?, _ url: UnsafePointer<CChar>?, _ offset: Int64, _ length: Int64,
                              _ out: UnsafeMutablePointer<OpaquePointer?>?) -> Int32 {
    guard let out else { return hcInvalid }
    out.pointee = nil
    guard let handle = CacheHandle.from(cache), let url else { return hcInvalid }
    let reader: CacheReader
    do throws(HTTPCacheError) {
        // -1 is "to the end"; any other negative length is the Swift API's HC_EINVAL.
        reader = try handle.cache.openReader(url: String(cString: url), offset: offset, length: length == -1 ? nil : length)
    } catch {
        return error.cCode
    }
    let readerHandle = ReaderHandle(reader: reader, dependents: handle.dependents)
    guard handle.dependents.add(readerHandle) else {
        reader.close()
        return HTTPCacheError.Code.closed.rawValue
    }
    out.pointee = readerHandle.retainedPointer
    return hcOK
}

@c public func hc_reader_info(_ reader: OpaquePointer?, _ info: UnsafeMutableRawPointer?,
                              _ timeoutMilliseconds: Int32) -> Int32 {
    guard let handle = ReaderHandle.from(reader), let info else { return hcInvalid }
    return cResult { () throws(HTTPCacheError) in
        let known = try handle.reader.info(timeout: seconds(timeoutMilliseconds))
        info.bindMemory(to: HCContentInfo.self, capacity: 1).pointee = HCContentInfo(totalLength: known.totalLength ?? -1,
                                     contentType: handle.cString(known.contentType),
                                     byteRanges: known.acceptsRanges == true ? 1 : 0)
    }
}

@c public func hc_reader_read(_ reader: OpaquePointer?, _ buffer: UnsafeMutableRawPointer?, _ size: Int,
                              _ timeoutMilliseconds: Int32) -> Int64 {
    // `size` is a size_t: one above Int.max arrives negative and is refused.
    guard let handle = ReaderHandle.from(reader), size >= 0, buffer != nil || size == 0 else { return Int64(hcInvalid) }
    do throws(HTTPCacheError) {
        let target = UnsafeMutableRawBufferPointer(start: buffer, count: size)
        return Int64(try handle.reader.read(into: target, timeout: seconds(timeoutMilliseconds)))
    } catch {
        return Int64(error.cCode)
    }
}

@c public func hc_reader_seek(_ reader: OpaquePointer?, _ offset: Int64) -> Int32 {
    guard let handle = ReaderHandle.from(reader) else { return hcInvalid }
    guard let position = handle.absolute(offset) else { return HTTPCacheError.Code.range.rawValue }
    return cResult { () throws(HTTPCacheError) in try handle.reader.seek(to: position) }
}

@c public func hc_reader_cancel(_ reader: OpaquePointer?) {
    ReaderHandle.from(reader)?.reader.cancel()
}

@c public func hc_reader_close(_ reader: OpaquePointer?) {
    ReaderHandle.release(reader)?.close()
}
