/// The stored response after a revalidation's answer (RFC 9111 §4.3.3, §4.3.4).
package enum RevalidationOutcome: Sendable, Equatable {
    case notModified  // 304 (§4.3.4): fields freshened, body kept
    case compare  // the stored status: compared (length, validators), kept or replaced
    case replace  // another status (§4.3.3) replaces it: a stored 404 answered by a 200 is now the 200
    case error  // 5xx (§4.3.3): kept; it may stand in (§4.2.4, RFC 5861 §4), else the error is forwarded
}

package enum Revalidation {
    /// A 206, 304 or 416 speaks of a 200's representation (§3.3, §4.3.4); others of their own.
    package static func representationStatus(_ status: Int) -> Int {
        status == 206 || status == 304 || status == 416 ? 200 : status
    }

    /// `storesAnyStatus`: forward and reverse modes; without it (proxy URLs' media policy) only
    /// 200s are stored, and another status is forwarded, the stored 200 untouched.
    package static func outcome(storedStatus: Int, responseStatus: Int, storesAnyStatus: Bool) -> RevalidationOutcome {
        if responseStatus == 304 { return .notModified }
        if representationStatus(responseStatus) == storedStatus { return .compare }
        if responseStatus >= 500 { return .error }
        return storesAnyStatus ? .replace : .error
    }
}
