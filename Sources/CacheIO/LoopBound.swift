/// A loop-thread object carried across threads; every access asserts it is
/// on its loop, which is the invariant that makes the unchecked Sendable
/// sound (the check is a thread-id compare, kept in release builds).
package struct LoopBound<Value>: @unchecked Sendable {
    private let wrapped: Value
    package let loop: EventLoop

    package init(_ value: Value, loop: EventLoop) {
        self.wrapped = value
        self.loop = loop
    }

    package var value: Value {
        loop.assertInLoop()
        return wrapped
    }

    /// The value off its loop, to be passed on only (to a type that posts to
    /// `loop` before touching it) or read for what never changes, never used
    /// for its loop-confined state.
    package var unchecked: Value { wrapped }
}
