/// One page of a list as every list route answers it: `{"<list>": [...], "next_cursor": …}`,
/// the cursor `null` on the last page.
struct PageView<Item: Encodable>: Encodable {
    let list: String
    let items: [Item]
    let nextCursor: String?

    init(_ list: String, _ items: [Item], nextCursor: String?) {
        self.list = list
        self.items = items
        self.nextCursor = nextCursor
    }

    /// A page of store rows, each shown through `view`, the next cursor from `cursor`.
    init<Row>(_ list: String, _ page: PageCut<Row>, cursor: (Row) -> String, view: (Row) -> Item) {
        self.init(list, page.shown.map(view), nextCursor: page.cursorRow.map(cursor))
    }

    private struct Key: CodingKey {
        let stringValue: String
        var intValue: Int? { nil }
        init(_ name: String) { stringValue = name }
        init?(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: Key.self)
        try container.encode(items, forKey: Key(list))
        try container.encode(nextCursor, forKey: Key("next_cursor"))  // null, not absent, on the last page
    }
}

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
