// hc_download_*: offline downloads over MediaCache's download calls. Ids are
// short strings (at most HC_DOWNLOAD_ID_SIZE - 1 characters); the event
// callback runs on the library's first loop thread.
import CacheIO
import CacheLoading
import HTTPCache

/// hc_download_status of include/httpcache.h, field for field; written into
/// the host's struct at the C layout's offsets (`store(into:)`).
struct HCDownloadStatus {
    public var state: Int32 = 0
    public var error: Int32 = 0
    public var bytesDone: Int64 = 0
    public var bytesTotal: Int64 = -1
    public var totalIsEstimate: Int32 = 0
    public var resourcesDone: Int32 = 0
    public var resourcesTotal: Int32 = 0
    public var segmentsDone: Int32 = 0
    public var segmentsTotal: Int32 = 0

    init(_ info: DownloadInfo) {
        state = Int32(DownloadState.allCases.firstIndex(of: info.state) ?? 0)
        error = info.failure?.cCode ?? hcOK
        bytesDone = info.bytesDone
        bytesTotal = info.bytesTotal ?? -1
        totalIsEstimate = info.totalIsEstimate ? 1 : 0
        resourcesDone = Int32(clamping: info.resourcesDone)
        resourcesTotal = Int32(clamping: info.resourcesTotal)
        segmentsDone = Int32(clamping: info.segmentsDone)
        segmentsTotal = Int32(clamping: info.segmentsTotal)
    }

    /// Writes the struct as C lays it out (ints 4 bytes, int64_t 8-aligned; 48 bytes).
    func store(into out: UnsafeMutableRawPointer) {
        out.storeBytes(of: state, toByteOffset: 0, as: Int32.self)
        out.storeBytes(of: error, toByteOffset: 4, as: Int32.self)
        out.storeBytes(of: bytesDone, toByteOffset: 8, as: Int64.self)
        out.storeBytes(of: bytesTotal, toByteOffset: 16, as: Int64.self)
        for (index, value) in [totalIsEstimate, resourcesDone, resourcesTotal, segmentsDone, segmentsTotal].enumerated() {
            out.storeBytes(of: value, toByteOffset: 24 + 4 * index, as: Int32.self)
        }
    }

    /// Calls `function` with a C struct of this status.
    func withC(_ body: (UnsafeRawPointer) -> Void) {
        withUnsafeTemporaryAllocation(byteCount: 48, alignment: 8) { buffer in
            store(into: buffer.baseAddress!)
            body(UnsafeRawPointer(buffer.baseAddress!))
        }
    }
}

public typealias HCDownloadEventFunction = @convention(c) (UnsafeMutableRawPointer?, UnsafePointer<CChar>?,
                                                            UnsafeRawPointer?) -> Void

/// The id buffer's size: ids are 8 hex digits today.
let hcDownloadIDSize = 16

private func text(_ pointer: UnsafePointer<CChar>?) -> String? { pointer.map { String(cString: $0) } }

@c public func hc_download_add(_ cache: OpaquePointer?, _ url: UnsafePointer<CChar>?, _ name: UnsafePointer<CChar>?,
                               _ variant: UnsafePointer<CChar>?, _ duration: Double, _ range: UnsafePointer<CChar>?,
                               _ idOut: UnsafeMutablePointer<CChar>?) -> Int32 {
    guard let handle = CacheHandle.from(cache), let url, let idOut else { return hcInvalid }
    let (name, variant, range) = (text(name), text(variant), text(range))
    let given = String(cString: url)
    do throws(HTTPCacheError) {
        let info = try handle.cache.downloadCall {
            $0.add(url: given, name: name, variant: variant, duration: duration > 0 ? duration : (duration < 0 ? duration : nil),
                   range: range)
        }
        let bytes = Array(info.id.utf8.prefix(hcDownloadIDSize - 1)) + [0]
        for (index, byte) in bytes.enumerated() { idOut[index] = CChar(bitPattern: byte) }
        return hcOK
    } catch {
        return error.cCode
    }
}

private func call(_ cache: OpaquePointer?, _ id: UnsafePointer<CChar>?,
                  _ body: @escaping @Sendable (DownloadManager, String) -> Result<DownloadRecord, HTTPCacheError>) -> Int32 {
    guard let handle = CacheHandle.from(cache), let id else { return hcInvalid }
    let given = String(cString: id)
    return cResult { () throws(HTTPCacheError) in _ = try handle.cache.downloadCall { body($0, given) } }
}

@c public func hc_download_pause(_ cache: OpaquePointer?, _ id: UnsafePointer<CChar>?) -> Int32 {
    call(cache, id) { $0.pause($1) }
}

@c public func hc_download_resume(_ cache: OpaquePointer?, _ id: UnsafePointer<CChar>?) -> Int32 {
    call(cache, id) { $0.resume($1) }
}

@c public func hc_download_remove(_ cache: OpaquePointer?, _ id: UnsafePointer<CChar>?) -> Int32 {
    call(cache, id) { $0.remove($1) }
}

@c public func hc_download_get(_ cache: OpaquePointer?, _ id: UnsafePointer<CChar>?,
                                  _ out: UnsafeMutableRawPointer?) -> Int32 {
    guard let handle = CacheHandle.from(cache), let id, let out else { return hcInvalid }
    let given = String(cString: id)
    guard let info = handle.cache.downloadList().first(where: { $0.id == given }) else {
        return HTTPCacheError.Code.notFound.rawValue
    }
    HCDownloadStatus(info).store(into: out)
    return hcOK
}

/// The host's callback and userdata: only called on the first loop's thread.
private struct EventTarget: @unchecked Sendable {
    let function: HCDownloadEventFunction
    let userdata: UnsafeMutableRawPointer?

    func call(_ info: DownloadInfo) {
        info.id.withCString { id in HCDownloadStatus(info).withC { function(userdata, id, $0) } }
    }
}

@c public func hc_download_list(_ cache: OpaquePointer?, _ function: HCDownloadEventFunction?,
                                _ userdata: UnsafeMutableRawPointer?) -> Int32 {
    guard let handle = CacheHandle.from(cache), let function else { return hcInvalid }
    for info in handle.cache.downloadList() {
        info.id.withCString { id in HCDownloadStatus(info).withC { function(userdata, id, $0) } }
    }
    return hcOK
}

@c public func hc_download_set_callback(_ cache: OpaquePointer?, _ function: HCDownloadEventFunction?,
                                        _ userdata: UnsafeMutableRawPointer?) -> Int32 {
    guard let handle = CacheHandle.from(cache) else { return hcInvalid }
    guard let function else { return handle.setDownloadCallback(nil) }
    let target = EventTarget(function: function, userdata: userdata)
    let callback: @Sendable (DownloadInfo) -> Void = { info in target.call(info) }
    return handle.setDownloadCallback(callback)
}

extension CacheHandle {
    /// Replaces the download event callback (nil: none).
    func setDownloadCallback(_ callback: (@Sendable (DownloadInfo) -> Void)?) -> Int32 {
        downloadCallback.withLock { token in
            if let old = token { cache.unsubscribeDownloads(old) }
            token = callback.flatMap { cache.subscribeDownloads($0, ended: {}) }
        }
        return hcOK
    }
}
