/// A loop-thread object carried across threads; every access asserts its loop (also in release
/// builds), the invariant that makes the unchecked Sendable sound.
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

    /// Off its loop: only to pass on (to a type posting to `loop` first) or to read what never
    /// changes.
    package var unchecked: Value { wrapped }
}
