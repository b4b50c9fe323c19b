import CacheHTTP
import CacheIO
import CacheStorage
import Glibc
import Logging

/// The writer end of a body: the proxy's client socket or an in-process reader's window. Loop thread calls.
package protocol BodySink: AnyObject {
    /// Bytes it takes now; at 0 the source reads nothing more until `resume()`.
    var room: Int { get }
    /// Untransformed cached runs go to it as file ranges (zero-copy, or decrypted as sent):
    /// no queued memory, so `room` does not hold them back.
    var takesFiles: Bool { get }
    func transform(for info: ContentInfo) -> Result<BodyTransform, DecryptionSetupError>
    /// The head as the client sees it (a rewrite's length set), or why there is none; `deliver` follows.
    func bodyHead(_ result: Result<ContentInfo, LoadError>)
    func bodyFile(_ file: DataFile, _ range: Range<Int64>)
    /// Output bytes, in order, within the range delivered.
    func bodyBytes(_ bytes: [UInt8])
    func bodyEnded()
    func bodyFailed(_ error: LoadError)
    /// An interim (1xx) response of the origin, before the head.
    func bodyInterim(_ head: HTTPResponseHead)
}

extension BodySink {
    package func bodyInterim(_ head: HTTPResponseHead) {}
}

/// One body on its way out: resource reader → transform (`BodyPipeline`) → sink, for the proxy and the
/// in-process reader. Reads only while the sink has room, so a client that does not read holds at most a
/// window of bytes. A whole-body rewrite collects the body (up to `BodyTransform.rewriteCap`, else it passes
/// unrewritten), rewrites it (off the loop when large) and serves the output from memory. Loop thread only.
package final class BodySource: ResourceReaderDelegate {
    package let reader: ResourceReader
    package private(set) var transform: BodyTransform = .none
    private weak var sink: BodySink?
    private let loop: EventLoop
    private let logger: Logger
    private var pipeline = BodyPipeline(.none)
    private enum Phase { case head, collecting, rewriting, planning, body, done }
    private var phase = Phase.head
    private var stored: ContentInfo?
    /// The part of a cached run not read yet.
    private var held: (file: DataFile, range: Range<Int64>)?
    /// Output served from memory before the reader's (a rewrite's output, or a collected
    /// body passing unrewritten), from offset 0.
    private var memory: [UInt8] = []
    private var memoryAt = 0
    /// Stopped because the sink had no room: `resume()` goes on. Logged the first time.
    package private(set) var waitsForRoom = false {
        didSet {
            guard waitsForRoom, !oldValue, !waitedBefore else { return }
            waitedBefore = true
            logger.debug("body paused: the client reads slower", metadata: ["url": "\(reader.resource.url)"])
        }
    }
    private var waitedBefore = false
    private var pumping = false
    private var pumpAgain = false
    private var buffer: UnsafeMutableRawBufferPointer?

    /// The largest read: keeps each loop turn short.
    package static let chunk = 256 << 10
    /// Bodies rewritten on the loop; larger ones on the pool, so the loop is never held long.
    static let inlineRewrite = 256 << 10

    package init(reader: ResourceReader, sink: BodySink, loop: EventLoop, logger: Logger) {
        self.reader = reader
        self.sink = sink
        self.loop = loop
        self.logger = logger
    }

    deinit { buffer?.deallocate() }

    package func start() {
        reader.delegate = self
        reader.start()
    }
    /// The output bytes the client gets (after `bodyHead`).
    package func deliver(_ output: Range<Int64>) {
        guard phase == .planning else { return }
        // After collecting, the reader's range is set already (a second `deliver` is ignored).
        reader.deliver(pipeline.want(output, totalLength: stored?.totalLength))
        phase = .body
        pump()
    }

    package func resume() {
        waitsForRoom = false
        reader.resumeFollowing()
        pump()
    }

    package func close() {
        phase = .done
        held = nil
        memory = []
        reader.close()
    }

    package func readerHeadReady(_ reader: ResourceReader, _ result: Result<ContentInfo, LoadError>) {
        guard phase == .head, let sink else { return }
        let info: ContentInfo
        do { info = try result.get() } catch { return fail(error) }
        stored = info
        do { transform = try sink.transform(for: info).get() } catch { return fail(.decryption(error.description)) }
        if transform.rewrite != nil {
            if let total = info.totalLength, total > Int64(BodyTransform.rewriteCap) {
                return passUnrewritten(info, length: total)
            }
            phase = .collecting
            reader.deliver(0..<(info.totalLength ?? Int64.max))
            return pump()
        }
        pipeline = BodyPipeline(transform)
        phase = .planning
        sink.bodyHead(.success(transform.outputInfo(info)))
    }

    package func readerCanContinue(_ reader: ResourceReader) { pump() }

    package func readerReceivedInterim(_ reader: ResourceReader, _ head: HTTPResponseHead) {
        guard phase == .head else { return }
        sink?.bodyInterim(head)
    }

    /// Bytes passed through (the disk is full): false pauses the download until `resume`.
    package func readerReceived(_ reader: ResourceReader, _ bytes: UnsafeRawBufferPointer) -> Bool {
        guard let sink else { return true }
        let offset = reader.offset - Int64(bytes.count)
        switch phase {
        case .collecting: collect(bytes)
        case .body: emit(bytes, at: offset)
        default: break
        }
        let hasRoom = sink.room > 0
        if !hasRoom { waitsForRoom = true }
        return hasRoom
    }

    private func pump() {
        guard !pumping else { return pumpAgain = true }
        pumping = true
        defer { pumping = false }
        repeat {
            pumpAgain = false
            step()
        } while pumpAgain
    }

    /// Moves bytes until the reader must wait, the sink is full or the body ends.
    private func step() {
        while phase == .collecting || phase == .body, let sink {
            let reads = !(transform.isNone && sink.takesFiles) || phase == .collecting
            if phase == .body && memoryAt < memory.count {
                guard sink.room > 0 else { return waitsForRoom = true }
                let end = min(memory.count, memoryAt + Self.chunk)
                let at = Int64(memoryAt)
                memoryAt = end
                memory.withUnsafeBytes { emit(UnsafeRawBufferPointer(rebasing: $0[Int(at)..<end]), at: at) }
                if memoryAt == memory.count { memory = [] }
                continue
            }
            if let (file, range) = held {
                // A sink taking files decrypts an encrypted one as it sends it.
                guard reads else {
                    // A body of unknown length still arriving: more than the sink holds would
                    // let the download run unpaced ahead of the client (Download.paceWindow).
                    if reader.resource.totalLength == nil && sink.room <= 0 { return waitsForRoom = true }
                    held = nil
                    sink.bodyFile(file, range)
                    continue
                }
                guard phase == .collecting || sink.room > 0 else { return waitsForRoom = true }
                let piece = range.lowerBound..<min(range.upperBound, range.lowerBound + Int64(Self.chunk))
                held = piece.upperBound < range.upperBound ? (file, piece.upperBound..<range.upperBound) : nil
                guard read(file, piece) else { return }
                continue
            }
            switch reader.next() {
            case .file(let file, let range): held = (file, range)
            case .pending: return
            case .failed(let error): return fail(error)
            case .finished: return finished()
            }
        }
    }

    private func read(_ file: DataFile, _ range: Range<Int64>) -> Bool {
        if file.isEncrypted && transform.isNone && phase == .body
            && range.lowerBound >= pipeline.wanted.lowerBound && range.upperBound <= pipeline.wanted.upperBound {
            return readDecrypted(file, range)
        }
        let buffer = self.buffer
            ?? UnsafeMutableRawBufferPointer.allocate(byteCount: DataFile.readCapacity(Self.chunk), alignment: 16)
        self.buffer = buffer
        guard let bytes = file.read(range, into: buffer) else {
            fail(.storage("read of the data file failed in \(range)"))
            return false
        }
        if phase == .collecting { collect(bytes) } else { emit(bytes, at: range.lowerBound) }
        return phase != .done
    }

    /// An encrypted file's bytes decrypted straight into the array the sink takes (the
    /// asked bytes moved to its start when not unit-aligned), not copied again.
    private func readDecrypted(_ file: DataFile, _ range: Range<Int64>) -> Bool {
        let count = Int(range.count)
        var read = true
        let bytes = [UInt8](unsafeUninitializedCapacity: DataFile.readCapacity(count)) { raw, initialized in
            let buffer = UnsafeMutableRawBufferPointer(raw)
            initialized = 0
            guard let plain = file.read(range, into: buffer) else { return read = false }
            if plain.baseAddress != UnsafeRawPointer(buffer.baseAddress) { memmove(buffer.baseAddress!, plain.baseAddress!, count) }
            initialized = count
        }
        guard read else {
            fail(.storage("read of the data file failed in \(range)"))
            return false
        }
        sink?.bodyBytes(bytes)
        return phase != .done
    }

    private func emit(_ input: UnsafeRawBufferPointer, at offset: Int64) {
        var out: [UInt8] = []
        do { try pipeline.feed(input, at: offset, into: &out) } catch { return transformFailed(error) }
        if !out.isEmpty { sink?.bodyBytes(out) }
    }

    private func finished() {
        if phase == .collecting { return rewrite() }
        var out: [UInt8] = []
        do { try pipeline.finish(into: &out) } catch { return transformFailed(error) }
        if !out.isEmpty { sink?.bodyBytes(out) }
        guard phase != .done else { return }
        phase = .done
        sink?.bodyEnded()
    }

    private func fail(_ error: LoadError) {
        let head = phase == .head || phase == .collecting || phase == .rewriting
        phase = .done
        if head { sink?.bodyHead(.failure(error)) } else { sink?.bodyFailed(error) }
    }

    private func transformFailed(_ error: TransformError) {
        fail(.decryption("cannot decrypt \(reader.resource.url): \(error)"))
    }

    private func collect(_ bytes: UnsafeRawBufferPointer) {
        memory.append(contentsOf: bytes)
        guard memory.count > BodyTransform.rewriteCap, let stored else { return }
        // Only a body of unknown length gets here (a known one is judged first).
        passUnrewritten(stored, length: nil)
    }

    /// Too large to rewrite: the body goes out as the origin sent it.
    private func passUnrewritten(_ info: ContentInfo, length: Int64?) {
        logger.warning("playlist passed through unrewritten: larger than the rewrite cap", metadata: [
            "url": "\(reader.resource.url)", "bytes": "\(length.map(String.init) ?? "over \(memory.count)")",
            "cap": "\(BodyTransform.rewriteCap)"])
        transform = .none
        pipeline = BodyPipeline(.none)
        phase = .planning
        sink?.bodyHead(.success(info))
    }

    private func rewrite() {
        guard let rewrite = transform.rewrite, let stored else { return }
        phase = .rewriting
        let input = memory
        memory = []
        let done: ([UInt8]) -> Void = { [self] output in
            guard phase == .rewriting else { return }
            memory = output
            var info = transform.outputInfo(stored)
            info.totalLength = Int64(output.count)
            pipeline = BodyPipeline(transform)
            phase = .planning
            sink?.bodyHead(.success(info))
        }
        guard Gzip.isGzip(input) else {
            if input.count <= Self.inlineRewrite { return done(rewrite(input)) }
            return loop.offload({ rewrite(input) }, done: done)
        }
        inflateAndRewrite(input, stored: stored, rewrite: rewrite, done: done)
    }

    /// A gzip body is inflated off the loop whatever its size (a small one can inflate to
    /// the cap); a failure is remembered per stored version (`InflateMemo`): it passes unchanged.
    private func inflateAndRewrite(_ input: [UInt8], stored: ContentInfo, rewrite: @escaping @Sendable ([UInt8]) -> [UInt8],
                                   done: @escaping ([UInt8]) -> Void) {
        let memo = reader.inflateMemo
        let url = reader.resource.url
        let version = InflateMemo.version(key: reader.resource.key, generation: reader.resource.generation,
                                          etag: stored.etag, lastModified: stored.lastModified, length: stored.totalLength)
        switch memo.decide(version, whenKnown: { [self] undecodable in
            guard phase == .rewriting else { return }
            if undecodable { return done(input) }
            loop.offload({ GzipRewrite.apply(input, rewrite) }, done: { outcome in
                if case .rewritten(let bytes) = outcome { done(bytes) } else { done(input) }
            })
        }) {
        case .wait:
            return
        case .undecodable:
            logger.debug("gzip body passed unchanged: its inflate failed before", metadata: ["url": "\(url)"])
            return done(input)
        case .inflate:
            break
        }
        let logger = logger
        loop.offload({ GzipRewrite.apply(input, rewrite) }, done: { outcome in
            switch outcome {
            case .rewritten(let bytes):
                memo.finished(version, undecodable: false)
                done(bytes)
            case .undecodable:
                logger.warning("body passed through unchanged: cannot inflate its gzip body for the rewrite (remembered for this stored version)", metadata: [
                    "url": "\(url)", "bytes": "\(input.count)", "cap": "\(BodyTransform.rewriteCap)"])
                memo.finished(version, undecodable: true)
                done(input)
            }
        })
    }
}
