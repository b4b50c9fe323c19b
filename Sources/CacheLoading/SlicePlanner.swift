import CacheStorage

/// What a reader does for one stretch of its range.
package enum PlanStep: Equatable, Sendable {
    /// Bytes already in the data file: send them.
    case cached(Range<Int64>)
    /// Bytes an in-flight download will write soon: wait for it.
    case await(Range<Int64>, download: Int)
    /// Bytes nobody is fetching: start a download.
    case fetch(Range<Int64>)

    package var range: Range<Int64> {
        switch self {
        case .cached(let r), .fetch(let r), .await(let r, _): return r
        }
    }
}

/// A download still to deliver `pending` (from its current position to its end).
package struct InFlight: Equatable, Sendable {
    package var id: Int
    package var pending: Range<Int64>
    package init(id: Int, pending: Range<Int64>) {
        self.id = id
        self.pending = pending
    }
}

/// Plans a byte range against what is cached and being downloaded; the Loader acts on it.
package enum SlicePlanner {
    /// How far behind a download's position a reader still waits for it instead of starting its own.
    package static let defaultJoinWindow: Int64 = 1 << 20

    package static func plan(_ range: Range<Int64>, available: RangeSet, inFlight: [InFlight],
                             joinWindow: Int64 = defaultJoinWindow) -> [PlanStep] {
        var steps: [PlanStep] = []
        var cursor = range.lowerBound
        for present in available.intersection(range) {
            if present.lowerBound > cursor { planGap(cursor..<present.lowerBound, inFlight, joinWindow, &steps) }
            steps.append(.cached(present))
            cursor = present.upperBound
        }
        if cursor < range.upperBound { planGap(cursor..<range.upperBound, inFlight, joinWindow, &steps) }
        return steps
    }

    private static func planGap(_ gap: Range<Int64>, _ inFlight: [InFlight], _ joinWindow: Int64,
                                _ steps: inout [PlanStep]) {
        var cursor = gap.lowerBound
        while cursor < gap.upperBound {
            // A download that will reach the cursor soon enough covers it.
            if let joined = inFlight.first(where: {
                $0.pending.contains(cursor) && cursor - $0.pending.lowerBound <= joinWindow
            }) {
                let end = min(gap.upperBound, joined.pending.upperBound)
                steps.append(.await(cursor..<end, download: joined.id))
                cursor = end
                continue
            }
            // Otherwise fetch up to where another download would take over.
            let nextStart = inFlight.map(\.pending.lowerBound).filter { $0 > cursor && $0 < gap.upperBound }.min()
            let end = nextStart ?? gap.upperBound
            steps.append(.fetch(cursor..<end))
            cursor = end
        }
    }
}
