import Foundation

/// The clock of a test cache (`HTTPCacheConfiguration.clock`): the wall
/// clock plus what the test advanced, so time passes without a sleep; or,
/// `stopped`, only what the test advanced.
final class TestClock: @unchecked Sendable {
    private let lock = NSLock()
    private var offset: Int64 = 0
    private let start: Int64?

    init(stopped: Bool = false) { start = stopped ? Self.wall() : nil }

    func advance(seconds: Int) { advance(milliseconds: Int64(seconds) * 1000) }

    func advance(milliseconds: Int64) { lock.withLock { offset += milliseconds } }

    var now: Int64 { lock.withLock { offset } + (start ?? Self.wall()) }

    private static func wall() -> Int64 { Int64(Date().timeIntervalSince1970 * 1000) }
}
