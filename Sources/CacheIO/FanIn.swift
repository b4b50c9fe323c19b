/// The one way work fans out across loops and back (admin, stats, cache operations).
package enum FanIn {
    /// `start(slot, answer)` per slot; false (its loop stopped) is a nil answer. `done` runs once,
    /// on the thread of the last answer (at once for none), with the answers in slot order.
    package static func gather<T: Sendable>(_ count: Int,
                                            start: (_ slot: Int, _ answer: @escaping @Sendable (T?) -> Void) -> Bool,
                                            done: @escaping @Sendable ([T?]) -> Void) {
        guard count > 0 else { return done([]) }
        let state = Locked<(left: Int, answers: [T?])>((count, Array(repeating: nil, count: count)))
        for slot in 0..<count {
            @Sendable func answer(_ value: T?) {
                let all = state.withLock { state -> [T?]? in
                    state.answers[slot] = value
                    state.left -= 1
                    return state.left == 0 ? state.answers : nil
                }
                if let all { done(all) }
            }
            if !start(slot, answer) { answer(nil) }
        }
    }
}
