import CacheHTTP
import CacheIO
import CacheStorage
import Glibc
import Logging

/// Runs a `ReaderMachine` on the loop: its source is a `ResourceReader`
/// (the same planner, downloads and waiting as a proxy response), its
/// output goes to a `ReaderChannel`. Events raised while actions run are
/// queued and handled after them, never re-entrantly. Loop thread only.
package final class ReaderDriver: ResourceReaderDelegate {
    private unowned let engine: Engine
    private let url: OriginURL
    /// The URL as the host gave it (what its decryption lookup is asked with).
    private let urlString: String
    private let channel: ReaderChannel
    private var machine: ReaderMachine
    private var queue: [ReaderMachine.Event] = []
    private var draining = false
    /// The epoch of the consumer's latest seek: what is published belongs to it.
    private var epoch = 0

    private var source: ResourceReader?
    /// Holds the resource in use while the reader is open, also between
    /// sources (at the end of the range, after a failure), so it is not
    /// evicted under a player that may seek back. Never started: no I/O.
    private var pin: ResourceReader?
    private var file: DataFile?
    private var spec: DecryptionSpec?
    private var transform: DecryptTransform?
    /// The input offset of the transform's next output byte.
    private var outputAt: Int64 = 0
    private var output: [UInt8] = []

    package init(engine: Engine, url: OriginURL, urlString: String, start: Int64, length: Int64?, channel: ReaderChannel) {
        engine.loop.assertInLoop()
        self.engine = engine
        self.url = url
        self.urlString = urlString
        self.channel = channel
        machine = ReaderMachine(start: start, length: length)
    }

    /// An event from the consumer (posted through the loop) with its epoch.
    package func consumer(_ event: ReaderMachine.Event, epoch: Int) {
        switch event {
        case .seek:
            self.epoch = epoch
            raise(event)
        case .demand:
            guard epoch == self.epoch else { return }
            // A download passing bytes straight through (full disk) waits for room.
            source?.resumeFollowing()
            raise(.demand(space: channel.demandHandled(epoch: epoch)))
        case .stop:
            raise(event)
            pin?.close()
            pin = nil
        default:
            raise(event)
        }
    }

    private func raise(_ event: ReaderMachine.Event) {
        queue.append(event)
        guard !draining else { return }
        draining = true
        defer { draining = false }
        while !queue.isEmpty {
            let next = queue.removeFirst()
            for action in machine.handle(next) { perform(action) }
        }
    }

    private func perform(_ action: ReaderMachine.Action) {
        switch action {
        case .chooseDecryption:
            guard let lookup = engine.decryption else { return raise(.decryptionChosen(.success(1))) }
            do { spec = try lookup(urlString) } catch {
                return raise(.decryptionChosen(.failure(DecryptionSetupError(
                    url: urlString, reason: "the key lookup failed: \(error)", underlying: error))))
            }
            if let spec {
                do { _ = try DecryptTransform(spec) } catch {
                    self.spec = nil
                    return raise(.decryptionChosen(.failure(DecryptionSetupError(url: urlString, reason: error.description))))
                }
            }
            raise(.decryptionChosen(.success(spec == nil ? 1 : Int64(BlockDecryptor.blockSize))))
        case .openSource(let from, let through):
            let range: ByteRangeSpec = through.map { .closed(first: from, last: $0) } ?? .from(first: from)
            if pin == nil { pin = engine.reader(url: url, spec: nil) }
            let reader = engine.reader(url: url, spec: range)
            source = reader
            transform = spec.flatMap { try? DecryptTransform($0) }
            reader.delegate = self
            reader.start()
        case .deliver(let range):
            outputAt = range.lowerBound
            source?.deliver(range)
        case .pull:
            guard let source else { return }
            switch source.next() {
            case .file(let file, let range):
                self.file = file
                raise(.file(range))
            case .pending: raise(.pending)
            case .finished: raise(.sourceFinished)
            case .failed(let error): raise(.sourceFailed(error))
            }
        case .copy(let range):
            copy(range)
        case .flush:
            output.removeAll(keepingCapacity: true)
            do { try transform?.finish(into: &output) } catch {
                return raise(.sourceFailed(.decryption("cannot decrypt \(urlString): \(error)")))
            }
            hand(output)
            // A body of unknown length has ended: its length is known now.
            if let total = source?.resource.totalLength { channel.update(totalLength: total) }
            raise(.flushed)
        case .publishInfo:
            if let info = machine.info {
                channel.publish(content: ReaderContent(info: info, rangesSupported: source?.rangesSupported))
            }
        case .publishEnd:
            channel.publishEnd(epoch: epoch)
        case .publishFailure:
            if let failure = machine.failure {
                engine.logger.debug("reader failed", metadata: ["url": "\(url.string)", "error": "\(failure)"])
                channel.publish(failure: failure, epoch: epoch)
            }
        case .closeSource:
            source?.close()
            source = nil
            file = nil
            transform = nil
        }
    }

    /// Reads input bytes from the data file, decrypts them when needed and
    /// hands them over. Each piece is a new array the channel takes over, so
    /// plain bytes are copied once on the loop (pread) and once to the caller.
    private func copy(_ range: Range<Int64>) {
        guard let file else { return raise(.sourceFailed(.storage("no data file"))) }
        let count = Int(range.count)
        var failedAt: Int64?
        let input = [UInt8](unsafeUninitializedCapacity: count) { buffer, initialized in
            var done = 0
            while done < count {
                let n = pread(file.fd, buffer.baseAddress! + done, count - done, off_t(range.lowerBound) + off_t(done))
                if n < 0 && errno == EINTR { continue }
                guard n > 0 else { failedAt = range.lowerBound + Int64(done); break }
                done += n
            }
            initialized = done
        }
        if let failedAt { return raise(.sourceFailed(.storage("read of the data file failed at \(failedAt)"))) }
        guard let transform else {
            outputAt = range.lowerBound
            return hand(input)
        }
        var output: [UInt8] = []
        output.reserveCapacity(count + BlockDecryptor.blockSize)
        var failure: TransformError?
        input.withUnsafeBytes { bytes in
            do throws(TransformError) { try transform.process(bytes, at: range.lowerBound, into: &output) } catch { failure = error }
        }
        if let failure { return raise(.sourceFailed(.decryption("cannot decrypt \(urlString): \(failure)"))) }
        hand(output)
    }

    /// Output bytes starting at `outputAt`: the part in `position..<end` goes to the consumer.
    private func hand(_ bytes: [UInt8]) {
        let produced = outputAt..<(outputAt + Int64(bytes.count))
        outputAt = produced.upperBound
        let wanted = produced.clamped(to: machine.position..<machine.end)
        var space = 0
        if wanted.isEmpty {
            space = channel.room
        } else {
            let chunk = wanted == produced ? bytes
                : Array(bytes[Int(wanted.lowerBound - produced.lowerBound)..<Int(wanted.upperBound - produced.lowerBound)])
            guard let room = channel.publish(chunk: chunk, epoch: epoch) else { return }
            space = room
        }
        raise(.published(count: wanted.count, space: space))
    }

    // MARK: ResourceReaderDelegate

    package func readerHeadReady(_ reader: ResourceReader, _ result: Result<ContentInfo, LoadError>) {
        guard reader === source else { return }
        switch result {
        case .success(let info): raise(.headReady(info))
        case .failure(let error): raise(.headFailed(error))
        }
    }

    package func readerCanContinue(_ reader: ResourceReader) {
        guard reader === source else { return }
        raise(.canContinue)
    }

    package func readerReceived(_ reader: ResourceReader, _ bytes: UnsafeRawBufferPointer) -> Bool {
        // The disk is full: bytes pass straight through, never landing in the file.
        guard reader === source else { return true }
        let offset = reader.offset - Int64(bytes.count)
        if let transform {
            output.removeAll(keepingCapacity: true)
            do { try transform.process(bytes, at: offset, into: &output) } catch {
                raise(.sourceFailed(.decryption("cannot decrypt \(urlString): \(error)")))
                return true
            }
            hand(output)
        } else {
            outputAt = offset
            hand([UInt8](bytes))
        }
        return channel.room > 0
    }

    /// Ends everything now (the cache is closing).
    package func stop() { raise(.stop) }
}
