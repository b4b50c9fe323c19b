import CacheStorage

extension ResourceState {
    /// After a failed download: when no byte of the resource is cached and
    /// nothing else is loading it, forget what the failed response's head said
    /// (its length above all), so a response that broke its own framing —
    /// more bytes than its Content-Length, say — leaves nothing behind.
    func forgetHeadIfNothingCached() {
        guard headKnown, downloads.isEmpty, resource.available.isEmpty else { return }
        resource.setInfo(totalLength: nil, contentType: nil, etag: nil, lastModified: nil)
        headKnown = false
    }
}
