import Foundation

/// The clock of a test cache (`HTTPCacheConfiguration.clock`): the wall
/// clock plus what the test advanced, so time passes without a sleep.
final class TestClock: @unchecked Sendable {
    private let lock = NSLock()
    private var offset: Int64 = 0

    func advance(seconds: Int) { lock.withLock { offset += Int64(seconds) * 1000 } }

    var now: Int64 { lock.withLock { offset } + Int64(Date().timeIntervalSince1970 * 1000) }
}
