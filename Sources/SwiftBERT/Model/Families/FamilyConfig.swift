import Foundation

/// A family's own fields in a converted config.json, under a key of its own beside the fields
/// every family shares (`"rotary": {…}`). A family names its type (`ModelFamily.configType`) and
/// reads it through an `EncoderConfig` accessor in its own folder, so a new family adds no field
/// to the shared config.
public protocol FamilyConfig: Codable, Sendable, Equatable {
    /// Its key in config.json.
    static var key: String { get }
}

/// The family fields of one config: at most one value per `FamilyConfig` type.
public struct FamilyConfigs: Sendable, Equatable {
    private var values: [String: any FamilyConfig] = [:]

    public init() {}

    public subscript<Fields: FamilyConfig>(_ type: Fields.Type) -> Fields? {
        get { values[Fields.key] as? Fields }
        set { values[Fields.key] = newValue }
    }

    /// True for BERT and its variants, whose fields are all shared ones.
    public var isEmpty: Bool { values.isEmpty }

    /// Whether the config holds the fields of `type`.
    public func holds(_ type: any FamilyConfig.Type) -> Bool { values[type.key] != nil }

    public static func == (a: Self, b: Self) -> Bool {
        a.values.count == b.values.count && a.values.allSatisfy { key, value in b.values[key].map(value.isEqual) ?? false }
    }

    private struct Key: CodingKey {
        let stringValue: String
        init(stringValue: String) { self.stringValue = stringValue }
        var intValue: Int? { nil }
        init?(intValue: Int) { nil }
    }

    /// Reads the fields of every family in `ModelFamilies.all` that config.json holds.
    init(from decoder: Decoder) throws {
        let container = try decoder.container(keyedBy: Key.self)
        func read<Fields: FamilyConfig>(_ type: Fields.Type) throws {
            self[type] = try container.decodeIfPresent(type, forKey: Key(stringValue: type.key))
        }
        for type in ModelFamilies.all.compactMap(\.configType) { try read(type) }
    }

    func encode(to encoder: Encoder) throws {
        var container = encoder.container(keyedBy: Key.self)
        for (key, value) in values { try container.encode(value, forKey: Key(stringValue: key)) }
    }
}

extension FamilyConfig {
    fileprivate func isEqual(_ other: any FamilyConfig) -> Bool { (other as? Self) == self }
}
