@testable import CacheIO
import XCTest

final class DescriptorBudgetTests: XCTestCase {
    func testThePartsAndWhatIsKeptAsideNeverExceedTheLimit() {
        for limit in [64, 256, 1024, 20_000, 1 << 20] {
            for loops in [1, 2, 8] {
                for requested in [nil, 10, 1_000_000] as [Int?] {
                    let budget = DescriptorBudget.split(limit: limit, reserved: 40, loops: loops, requestedClients: requested)
                    let used = budget.reserved + budget.clientConnections + budget.originConnections + budget.dataFiles
                    XCTAssertLessThanOrEqual(used, max(limit, 40 + 3 * loops), "\(budget)")
                    XCTAssertGreaterThanOrEqual(budget.originConnections, loops)
                    XCTAssertGreaterThanOrEqual(budget.dataFiles, loops)
                }
            }
        }
    }

    func testAnEighthEachForOriginsAndFilesAndTheRestForClients() {
        let budget = DescriptorBudget.split(limit: 1064, reserved: 40)
        XCTAssertEqual(budget.originConnections, 128)
        XCTAssertEqual(budget.dataFiles, 128)
        XCTAssertEqual(budget.clientConnections, 768)
    }

    func testARequestedClientCapIsHonouredUpToWhatIsLeft() {
        XCTAssertEqual(DescriptorBudget.split(limit: 1064, reserved: 40, requestedClients: 100).clientConnections, 100)
        XCTAssertEqual(DescriptorBudget.split(limit: 1064, reserved: 40, requestedClients: 5_000).clientConnections, 768)
    }

    func testThisProcessReservesWhatItHasOpen() {
        let budget = DescriptorBudget.forThisProcess(loops: 2)
        XCTAssertGreaterThan(budget.reserved, 3 + DescriptorBudget.margin(loops: 2) - 1, "stdio at least")
        XCTAssertGreaterThan(budget.clientConnections, 0)
        XCTAssertEqual(DescriptorBudget.perLoop(budget.originConnections, loops: 2), max(1, budget.originConnections / 2))
    }
}
