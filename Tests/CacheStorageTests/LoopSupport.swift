import CacheIO
import Foundation
import XCTest

/// A test whose store lives on `loop`: work handed to the loop thread and
/// its answer waited for, and facts of the loop waited on (bounded).
protocol LoopTestCase: XCTestCase {
    var loop: EventLoop! { get }
}

extension LoopTestCase {
    /// Runs `body` on the loop; what it returns or throws.
    func onLoop<T: Sendable>(_ body: @escaping @Sendable () throws -> T) throws -> T {
        try loop.submitAndWait { Result { try body() } }!.get()
    }

    /// Polls a fact on the loop until it holds; fails after `timeout`.
    func waitOnLoop(_ what: String, timeout: TimeInterval = 30, _ condition: @escaping @Sendable () -> Bool) throws {
        let deadline = Date().addingTimeInterval(timeout)
        while try !onLoop(condition) {
            guard Date() < deadline else { return XCTFail("timed out waiting for \(what)") }
            usleep(2_000)
        }
    }
}
