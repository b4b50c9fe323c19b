/// One answer from each of several loops (or threads), gathered: `done`
/// runs once, after the last, with the answers in slot order (nil for a
/// slot that could not be reached). The one way work fans out across the
/// loops and back (admin and stats over every server, cache operations
/// over every store).
package enum FanIn {
    /// Calls `start(slot, answer)` for each slot in 0..<count; a `start` that
    /// returns false (its loop has stopped) counts as a nil answer. `done`
    /// runs on the thread of the last answer (at once for `count == 0`).
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
