import CacheHTTP
import CacheIO
import CacheStorage
import Logging

/// Runs a `ReaderMachine` on the loop: the sink of a `BodySource` (as a proxy response has), writing to a
/// `ReaderChannel`. Events raised while acting are queued, never re-entrant. Loop thread only.
package final class ReaderDriver: BodySink {
    private unowned let engine: Engine
    private let url: OriginURL
    /// The URL as the host gave it (what its decryption lookup is asked with).
    private let urlString: String
    private let channel: ReaderChannel
    private var machine: ReaderMachine
    private var events = EventQueue<ReaderMachine.Event>()
    /// The epoch of the consumer's latest seek: what is published belongs to it.
    private var epoch = 0
    private var source: BodySource?
    /// Holds the resource in use while the reader is open, also between sources, so it is
    /// not evicted under a player that may seek back. Never started: no I/O.
    private var pin: ResourceReader?
    /// The transform of the source being opened (chosen before it opens, to widen its range).
    private var transform: BodyTransform = .none

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
            channel.demandHandled(epoch: epoch)
            raise(event)
            source?.resume()
        case .stop:
            raise(event)
            pin?.close()
            pin = nil
        default:
            raise(event)
        }
    }

    private func raise(_ event: ReaderMachine.Event) {
        guard events.push(event) else { return }
        while let next = events.next() {
            for action in machine.handle(next) { perform(action) }
        }
    }

    private func perform(_ action: ReaderMachine.Action) {
        switch action {
        case .openSource(let from, let through):
            do { transform = try engine.transform(url: urlString).get() } catch {
                return raise(.headFailed(.decryption(error)))
            }
            // The first request to the origin asks for the blocks the plaintext range needs.
            let input = transform.inputRange(forOutput: from..<(through.map { $0 + 1 } ?? Int64.max), totalLength: nil)
            if pin == nil { pin = engine.reader(url: url, spec: nil) }
            let source = BodySource(reader: engine.reader(url: url, spec: ReaderMachine.spec(from: input.lowerBound,
                                                                                            to: input.upperBound)),
                                    sink: self, loop: engine.loop, logger: engine.logger)
            self.source = source
            source.start()
        case .deliver(let range):
            source?.deliver(range)
        case .publishInfo:
            if let info = machine.info {
                channel.publish(content: ReaderContent(info: info, rangesSupported: source?.reader.rangesSupported))
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
        }
    }

    package var room: Int { channel.room }
    package var takesFiles: Bool { false }
    package func transform(for info: ContentInfo) -> Result<BodyTransform, DecryptionSetupError> { .success(transform) }

    package func bodyHead(_ result: Result<ContentInfo, LoadError>) {
        switch result {
        case .success(let info): raise(.headReady(info))
        case .failure(let error): raise(.headFailed(.load(error)))
        }
    }

    package func bodyFile(_ file: DataFile, _ range: Range<Int64>) {}

    package func bodyBytes(_ bytes: [UInt8]) {
        guard channel.publish(chunk: bytes, epoch: epoch) != nil else { return }
        raise(.published(count: bytes.count))
    }

    package func bodyEnded() {
        // A body of unknown length has ended: its length is known now.
        if let total = source?.reader.resource.totalLength { channel.update(totalLength: total) }
        raise(.sourceFinished)
    }

    package func bodyFailed(_ error: LoadError) { raise(.sourceFailed(error)) }

    /// Ends everything now (the cache is closing).
    package func stop() { raise(.stop) }
}
