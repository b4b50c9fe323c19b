import Foundation

/// What went wrong in concurrent clients, collected from any thread.
final class Failures: @unchecked Sendable {
    private let lock = NSLock()
    private var list: [String] = []
    func add(_ failure: String) { lock.withLock { list.append(failure) } }
    var all: [String] { lock.withLock { list } }
}

/// A client's bytes were not the expected ones (thrown out of a client's loop).
struct Mismatch: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
