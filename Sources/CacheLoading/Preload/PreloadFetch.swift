import CacheHTTP
import CacheStorage
import CacheUpstream
import Glibc

/// One item of a preload read through the engine like a client would read
/// it (so a preload and a player wanting the same bytes share one download),
/// with the bytes left in the cache. Playlists' bodies are kept for the
/// walker. Loop thread only.
final class PreloadFetch: ResourceReaderDelegate {
    /// Bodies wanted by the walker are read up to this size (playlists are small).
    static let bodyLimit: Int64 = 4 << 20

    let item: PreloadItem
    private weak var run: PreloadRun?
    private var reader: ResourceReader?
    private var body: [UInt8]?
    private var ended = false

    init(item: PreloadItem, run: PreloadRun) {
        self.item = item
        self.run = run
    }

    /// Begins reading (called by the preloader when a slot is free).
    func start(_ engine: Engine) {
        guard let url = OriginURL.parse(item.url) else {
            return end(.failure(.fetch(url: item.url, code: -1, message: "not an http(s) URL")))
        }
        let spec = item.range.map { ByteRangeSpec.closed(first: $0.lowerBound, last: $0.upperBound - 1) }
        let reader = engine.reader(url: url, spec: spec, background: true)
        self.reader = reader
        reader.delegate = self
        reader.start()
    }

    /// Stops without reporting (the preload was canceled).
    func cancel() {
        ended = true
        closeReader()
    }

    // MARK: ResourceReaderDelegate

    func readerHeadReady(_ reader: ResourceReader, _ result: Result<ContentInfo, LoadError>) {
        guard !ended else { return }
        let info: ContentInfo
        switch result {
        case .failure(let error): return end(.failure(PreloadFailure(url: item.url, error)))
        case .success(let value): info = value
        }
        var range = 0..<(info.totalLength ?? Int64.max)
        if let asked = item.range, let total = info.totalLength {
            guard asked.lowerBound < total else {
                return end(.failure(.fetch(url: item.url, code: -10, message: "range \(asked.lowerBound)-\(asked.upperBound - 1) is outside the \(total) bytes")))
            }
            range = asked.clamped(to: 0..<total)
        } else if let asked = item.range {
            range = asked
        }
        if item.wantsBody && item.range == nil && (info.totalLength ?? 0) <= Self.bodyLimit { body = [] }
        run?.sizeKnown(Int64(range.count) == Int64.max ? nil : Int64(range.count))
        reader.deliver(range)
        pump()
    }

    func readerCanContinue(_ reader: ResourceReader) { pump() }

    func readerReceived(_ reader: ResourceReader, _ bytes: UnsafeRawBufferPointer) -> Bool {
        collect(bytes)
        run?.bytesFetched(Int64(bytes.count))
        return true
    }

    private func pump() {
        while !ended, let reader {
            switch reader.next() {
            case .file(let file, let range):
                if body != nil { read(file, range) }
                run?.bytesFetched(Int64(range.count))
            case .pending:
                return
            case .finished:
                return end(.success(body))
            case .failed(let error):
                return end(.failure(PreloadFailure(url: item.url, error)))
            }
        }
    }

    private func collect(_ bytes: UnsafeRawBufferPointer) {
        guard body != nil else { return }
        if Int64(body!.count + bytes.count) > Self.bodyLimit {
            body = nil  // too big to be a playlist: not walked
        } else {
            body!.append(contentsOf: bytes)
        }
    }

    private func read(_ file: DataFile, _ range: Range<Int64>) {
        var buffer = [UInt8](repeating: 0, count: Int(min(range.count, 64 << 10)))
        var offset = range.lowerBound
        while offset < range.upperBound {
            let want = min(buffer.count, Int(range.upperBound - offset))
            let n = buffer.withUnsafeMutableBytes { pread(file.fd, $0.baseAddress, want, off_t(offset)) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { body = nil; return }
            buffer.withUnsafeBytes { collect(UnsafeRawBufferPointer(rebasing: $0[0..<n])) }
            offset += Int64(n)
        }
    }

    private func end(_ outcome: Result<[UInt8]?, PreloadFailure>) {
        guard !ended else { return }
        ended = true
        if case .success = outcome, let run, run.walker.request.pin, let resource = reader?.resource {
            resource.setPin(run.walker.request.url)
        }
        let finalURL = reader.flatMap { run?.finalURL(of: $0, item: item) }
        closeReader()
        run?.fetchEnded(self, outcome, finalURL: finalURL)
    }

    private func closeReader() {
        reader?.delegate = nil
        reader?.close()
        reader = nil
    }
}

extension PreloadFailure {
    /// The failure of a read, with the code `HTTPCacheError` gives it.
    init(url: String, _ error: LoadError) {
        let code: Int32
        switch error {
        case .originStatus(let status, _, _): code = status == 404 || status == 410 ? -5 : -8
        case .upstream(.timeout), .notCached: code = -6
        case .upstream(.tls): code = -9
        case .upstream(.configuration): code = -1
        case .upstream, .mismatch, .changed: code = -8
        case .storage: code = -3
        case .decryption: code = -1
        }
        self = .fetch(url: url, code: code, message: error.description)
    }
}
