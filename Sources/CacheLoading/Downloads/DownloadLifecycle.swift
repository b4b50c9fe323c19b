import CacheIO
import CacheStorage

// The life of one download as a value (no sockets, no clock: tested as a table).
//   queued ──start──▶ running ──ended──▶ completed
//     ▲  │              │  │ └──failed / too large──▶ failed
//     │  └──pause──▶ paused ◀──pause──┘               │
//     └──────────── resume (paused, failed) ◀──────────┘
//   any ──remove──▶ removed (its resources let go of and deleted)
//   running ──interrupted (the cache closes)──▶ queued (goes on at the next start)

/// Where a download's fetches stand, as the driver reports them.
package struct DownloadProgress: Sendable, Equatable {
    package var bytesDone: Int64 = 0
    /// Bytes of the resources whose size is known.
    package var bytesKnown: Int64?
    /// How many resources' sizes are known.
    package var resourcesSized = 0
    /// What the walk counted (HLS: its `estimatedBytes` is the estimate until sizes are known).
    package var counts = PreloadCounts()
    /// The walk found everything there is to fetch (false while playlists may add more).
    package var walkDone = false
}

package struct DownloadLifecycle: Sendable, Equatable {
    package enum Event: Sendable, Equatable {
        /// A slot is free: fetch.
        case start
        /// `room`: bytes of the cache limit not held by other downloads.
        case progress(DownloadProgress, room: Int64)
        /// The fetching ended: nil when everything was fetched and kept.
        case ended(HTTPCacheError?)
        case pause
        case resume
        case remove
        /// The cache closes while it runs: it goes on at the next start.
        case interrupted
    }

    package enum Action: Sendable, Equatable {
        /// Begin fetching (the preload of its selection).
        case fetch
        /// Stop the fetches running (what they brought stays).
        case stopFetching
        case persist
        /// Let go of its resources: those no other download holds are deleted.
        case release
        /// Remove the record from the folder.
        case forget
        case announce
    }

    package private(set) var record: DownloadRecord

    /// One that was running when the process ended (a crash) is queued to go on.
    package init(_ record: DownloadRecord) {
        self.record = record
        if self.record.state == .running { self.record.state = .queued }
    }

    package var state: DownloadRecord.State { record.state }

    package mutating func handle(_ event: Event) -> [Action] {
        switch (record.state, event) {
        case (.removed, _):
            return []
        case (_, .remove):
            let wasRunning = record.state == .running
            record.state = .removed
            return (wasRunning ? [.stopFetching] : []) + [.release, .forget, .announce]
        case (.queued, .start):
            record.state = .running
            record.failure = nil
            record.bytesDone = 0
            return [.fetch, .persist, .announce]
        case (.running, .progress(let progress, let room)):
            apply(progress)
            let needed = (progress.bytesKnown ?? 0) + Int64(progress.counts.resourcesTotal) * StoreGroup.entryOverhead
            if needed > room {
                record.state = .failed
                record.failure = HTTPCacheError(.tooLarge, "needs at least \(needed) bytes; the cache limit leaves \(max(0, room)) for it")
                // What it fetched goes: it cannot be kept whole, and pinned it would crowd out everything else.
                return [.stopFetching, .release, .persist, .announce]
            }
            return [.announce]
        case (.running, .ended(let failure)):
            if let failure {
                record.state = .failed
                record.failure = failure
            } else {
                record.state = .completed
                record.totalIsEstimate = false
                record.bytesTotal = record.bytesDone
            }
            return [.persist, .announce]
        case (.running, .pause), (.queued, .pause):
            let wasRunning = record.state == .running
            record.state = .paused
            return (wasRunning ? [.stopFetching] : []) + [.persist, .announce]
        case (.paused, .resume), (.failed, .resume):
            record.state = .queued
            record.failure = nil
            return [.persist, .announce]
        case (.running, .interrupted):
            record.state = .queued
            return [.stopFetching, .persist]
        default:
            // Late reports of stopped fetches, a resume of what runs, a pause of what ended.
            return []
        }
    }

    private mutating func apply(_ progress: DownloadProgress) {
        let counts = progress.counts
        record.bytesDone = progress.bytesDone
        record.resourcesDone = counts.resourcesDone
        record.resourcesTotal = counts.resourcesTotal
        record.segmentsDone = counts.segmentsDone
        record.segmentsTotal = counts.segmentsTotal
        let known = progress.bytesKnown ?? 0
        if progress.walkDone && progress.resourcesSized >= counts.resourcesTotal && progress.bytesKnown != nil {
            record.bytesTotal = known
            record.totalIsEstimate = false
        } else if counts.estimatedBytes > 0 {
            // HLS: BANDWIDTH × duration until every size is known.
            record.bytesTotal = max(counts.estimatedBytes, known)
            record.totalIsEstimate = true
        } else if progress.resourcesSized > 0 {
            // Not all sizes known yet: the known ones' average for the others.
            record.bytesTotal = known + known / Int64(progress.resourcesSized)
                * Int64(max(0, counts.resourcesTotal - progress.resourcesSized))
            record.totalIsEstimate = true
        }
    }
}
