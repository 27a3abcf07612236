import EchoRelayAPI

/// One page of store rows. The store is asked for one row more than the page holds: that row
/// says another page exists, and the last row shown is its cursor. The API's lists and the
/// console's pages page the same way.
struct PageCut<Row> {
    let shown: ArraySlice<Row>
    /// The row whose key is the next page's cursor; nil on the last page.
    let cursorRow: Row?

    /// Asks `rows` for `limit + 1` rows and keeps `limit`.
    static func fetch(limit: Int, _ rows: (Int) async throws -> [Row]) async rethrows -> PageCut {
        let fetched = try await rows(limit + 1)
        let shown = fetched.prefix(limit)
        return PageCut(shown: shown, cursorRow: fetched.count > limit ? shown.last : nil)
    }
}

extension API.Page {
    /// A page of store rows, each shown as `item` shows it; the next page's cursor is made
    /// from the last row shown.
    init<Row>(_ cut: PageCut<Row>, item: (Row) -> Item, cursor: (Row) -> String) {
        self.init(cut.shown.map(item), next_cursor: cut.cursorRow.map(cursor))
    }
}
