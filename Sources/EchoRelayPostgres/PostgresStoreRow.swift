import EchoRelayCore
import Foundation
import PostgresNIO

/// A row read by position for the decoders both stores share (`StoreRow`): each cell is
/// decoded as a typed tuple would decode it (timestamptz to Date, text[] to [String]). The
/// claims and batch statements decode their own typed rows.
struct PostgresStoreRow: StoreRow {
    private let cells: PostgresRandomAccessRow

    init(_ row: PostgresRow) {
        cells = row.makeRandomAccess()
    }

    private func decode<T: PostgresDecodable>(_ column: Int) throws -> T {
        try cells[column].decode(T.self)
    }

    func string(_ column: Int) throws -> String { try decode(column) }
    func optionalString(_ column: Int) throws -> String? { try decode(column) }
    func int64(_ column: Int) throws -> Int64 { try decode(column) }
    func int(_ column: Int) throws -> Int { try decode(column) }
    func optionalInt(_ column: Int) throws -> Int? { try decode(column) }
    func bool(_ column: Int) throws -> Bool { try decode(column) }
    func date(_ column: Int) throws -> Date { try decode(column) }
    func optionalDate(_ column: Int) throws -> Date? { try decode(column) }
    func optionalBytes(_ column: Int) throws -> [UInt8]? { (try decode(column) as ByteBuffer?).map { Array($0.readableBytesView) } }
    func stringArray(_ column: Int) throws -> [String] { try decode(column) }
}

extension AsyncSequence where Element == PostgresRow {
    /// Every row, to read through a shared decoder.
    func storeRows() async throws -> [PostgresStoreRow] {
        var rows: [PostgresStoreRow] = []
        for try await row in self { rows.append(PostgresStoreRow(row)) }
        return rows
    }
}
