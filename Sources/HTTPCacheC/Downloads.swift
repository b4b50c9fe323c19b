// hc_download_*: offline downloads over MediaCache's download calls. Ids are short strings (at most
// HC_DOWNLOAD_ID_SIZE - 1 characters); the event callback runs on the library's first loop thread.
import CacheLoading
import HTTPCache

/// Writes an hc_download_status at the C layout's offsets (ints 4 bytes, int64_t 8-aligned; 48 bytes).
private func store(_ info: DownloadInfo, into out: UnsafeMutableRawPointer) {
    let state = Int32(DownloadState.allCases.firstIndex(of: info.state) ?? 0)
    out.storeBytes(of: state, toByteOffset: 0, as: Int32.self)
    out.storeBytes(of: info.failure?.cCode ?? hcOK, toByteOffset: 4, as: Int32.self)
    out.storeBytes(of: info.bytesDone, toByteOffset: 8, as: Int64.self)
    out.storeBytes(of: info.bytesTotal ?? -1, toByteOffset: 16, as: Int64.self)
    let ints = [info.totalIsEstimate ? 1 : 0, info.resourcesDone, info.resourcesTotal, info.segmentsDone, info.segmentsTotal]
    for (index, value) in ints.enumerated() {
        out.storeBytes(of: Int32(clamping: value), toByteOffset: 24 + 4 * index, as: Int32.self)
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
    return cResult { () throws(HTTPCacheError) in
        let info = try handle.cache.downloadCall {
            $0.add(url: given, name: name, variant: variant, duration: duration > 0 ? duration : (duration < 0 ? duration : nil),
                   range: range)
        }
        let bytes = Array(info.id.utf8.prefix(hcDownloadIDSize - 1)) + [0]
        for (index, byte) in bytes.enumerated() { idOut[index] = CChar(bitPattern: byte) }
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
    store(info, into: out)
    return hcOK
}

/// The host's callback and userdata: only called on the first loop's thread.
private struct EventTarget: @unchecked Sendable {
    let function: HCDownloadEventFunction
    let userdata: UnsafeMutableRawPointer?

    func call(_ info: DownloadInfo) {
        withUnsafeTemporaryAllocation(byteCount: 48, alignment: 8) { buffer in
            store(info, into: buffer.baseAddress!)
            info.id.withCString { id in function(userdata, id, UnsafeRawPointer(buffer.baseAddress!)) }
        }
    }
}

@c public func hc_download_list(_ cache: OpaquePointer?, _ function: HCDownloadEventFunction?,
                                _ userdata: UnsafeMutableRawPointer?) -> Int32 {
    guard let handle = CacheHandle.from(cache), let function else { return hcInvalid }
    let target = EventTarget(function: function, userdata: userdata)
    for info in handle.cache.downloadList() { target.call(info) }
    return hcOK
}

@c public func hc_download_set_callback(_ cache: OpaquePointer?, _ function: HCDownloadEventFunction?,
                                        _ userdata: UnsafeMutableRawPointer?) -> Int32 {
    guard let handle = CacheHandle.from(cache) else { return hcInvalid }
    let target = function.map { EventTarget(function: $0, userdata: userdata) }
    handle.downloadCallback.withLock { token in
        if let old = token { handle.cache.unsubscribeDownloads(old) }
        token = target.flatMap { target in handle.cache.subscribeDownloads({ target.call($0) }, ended: {}) }
    }
    return hcOK
}
