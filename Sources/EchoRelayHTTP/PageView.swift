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

    /// A page cut from `fetched`, which the store was asked for with `limit + 1`: one row
    /// more than asked says another page exists, and the last row shown is its cursor.
    init<Row>(_ list: String, fetched: [Row], limit: Int, cursor: (Row) -> String, view: (Row) -> Item) {
        let shown = fetched.prefix(limit)
        self.init(list, shown.map(view), nextCursor: fetched.count > limit ? shown.last.map(cursor) : nil)
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
