import CAudioToolbox

// Audio Format Services: the C entry points of AudioToolbox/AudioFormat.h, exported with
// @_cdecl. Each property's value comes from `AudioFormatProperty.value(_:specifier:)`; these
// functions check the caller's sizes and pointers and copy it out.

@_cdecl("AudioFormatGetPropertyInfo")
public func audioFormatGetPropertyInfo(_ inPropertyID: AudioFormatPropertyID, _ inSpecifierSize: UInt32,
                                       _ inSpecifier: UnsafeRawPointer?,
                                       _ outPropertyDataSize: UnsafeMutablePointer<UInt32>?) -> OSStatus {
    withStatus {
        guard let outPropertyDataSize else { throw AudioToolboxError(kAudio_ParamError, "outPropertyDataSize is NULL") }
        let specifier = try AudioFormatSpecifier(inSpecifier, size: inSpecifierSize)
        outPropertyDataSize.pointee = UInt32(try AudioFormatProperty.value(inPropertyID, specifier: specifier).byteCount)
    }
}

@_cdecl("AudioFormatGetProperty")
public func audioFormatGetProperty(_ inPropertyID: AudioFormatPropertyID, _ inSpecifierSize: UInt32,
                                   _ inSpecifier: UnsafeRawPointer?, _ ioPropertyDataSize: UnsafeMutablePointer<UInt32>?,
                                   _ outPropertyData: UnsafeMutableRawPointer?) -> OSStatus {
    withStatus {
        guard let ioPropertyDataSize else { throw AudioToolboxError(kAudio_ParamError, "ioPropertyDataSize is NULL") }
        let specifier = try AudioFormatSpecifier(inSpecifier, size: inSpecifierSize)
        let capacity = Int(ioPropertyDataSize.pointee)
        if inPropertyID == kAudioFormatProperty_FormatInfo {
            // The value is read and written: the caller's description, completed.
            let size = MemoryLayout<AudioStreamBasicDescription>.size
            guard let outPropertyData else { ioPropertyDataSize.pointee = UInt32(size); return }
            guard capacity >= size else {
                throw AudioToolboxError(kAudioFormatBadPropertySizeError, "an AudioStreamBasicDescription is \(size) bytes, not \(capacity)")
            }
            let described = outPropertyData.loadUnaligned(as: AudioStreamBasicDescription.self)
            let completed = try AudioFormatProperty.completedDescription(described, cookie: specifier.bytes)
            outPropertyData.storeBytes(of: completed, as: AudioStreamBasicDescription.self)
            ioPropertyDataSize.pointee = UInt32(size)
            return
        }
        let value = try AudioFormatProperty.value(inPropertyID, specifier: specifier)
        guard let outPropertyData else { ioPropertyDataSize.pointee = UInt32(value.byteCount); return }
        ioPropertyDataSize.pointee = UInt32(try value.store(into: outPropertyData, capacity: capacity))
    }
}

/// The specifier a caller passed: its bytes, checked against the size each property needs.
struct AudioFormatSpecifier {
    let bytes: [UInt8]

    init(_ pointer: UnsafeRawPointer?, size: UInt32) throws {
        guard size > 0 else { bytes = []; return }
        guard let pointer else { throw AudioToolboxError(kAudio_ParamError, "inSpecifier is NULL, inSpecifierSize \(size)") }
        guard size <= 1 << 24 else { throw AudioToolboxError(kAudioFormatBadSpecifierSizeError, "a specifier of \(size) bytes") }
        bytes = Array(UnsafeRawBufferPointer(start: pointer, count: Int(size)))
    }

    /// The specifier as one value of `T`; kAudioFormatBadSpecifierSizeError ('!spc') for another size.
    func value<T: BitwiseCopyable>(_: T.Type, named name: String) throws -> T {
        guard bytes.count == MemoryLayout<T>.size else {
            throw AudioToolboxError(kAudioFormatBadSpecifierSizeError,
                                    "the specifier is \(name) (\(MemoryLayout<T>.size) bytes), not \(bytes.count) bytes")
        }
        return bytes.withUnsafeBytes { $0.loadUnaligned(as: T.self) }
    }

    /// No specifier: the properties that take none refuse one.
    func requireNone() throws {
        guard bytes.isEmpty else {
            throw AudioToolboxError(kAudioFormatBadSpecifierSizeError, "the property takes no specifier (\(bytes.count) bytes given)")
        }
    }
}

/// A property's value, as AudioFormatGetProperty copies it out.
enum AudioFormatValue {
    /// A value of one size (a UInt32, a CFStringRef): the buffer must hold it.
    case fixed([UInt8])
    /// A variable-size value (an AudioChannelLayout): the buffer must hold all of it.
    case variable([UInt8])
    /// An array: as many whole items as fit are copied.
    case array([UInt8], itemSize: Int)
    /// A CFStringRef the caller releases (made only when copied out).
    case string(String)

    var byteCount: Int {
        switch self {
        case .fixed(let bytes), .variable(let bytes), .array(let bytes, _): bytes.count
        case .string: MemoryLayout<UnsafeRawPointer>.size
        }
    }

    /// Copies the value into `buffer` of `capacity` bytes.
    /// - Returns: the bytes written.
    /// - Throws: kAudioFormatBadPropertySizeError ('!siz') when a value that is not an array does not fit.
    func store(into buffer: UnsafeMutableRawPointer, capacity: Int) throws -> Int {
        let bytes: [UInt8]
        switch self {
        case .array(let items, let itemSize):
            bytes = Array(items.prefix(capacity / itemSize * itemSize))
        case .fixed(let value), .variable(let value):
            bytes = value
        case .string(let text):
            guard capacity >= byteCount else { throw sizeError(capacity) }
            let string = CFStringCreateWithCString(nil, text, CFStringEncoding(kCFStringEncodingUTF8))
            buffer.storeBytes(of: string.map { Unmanaged.passRetained($0).toOpaque() }, as: UnsafeMutableRawPointer?.self)
            return byteCount
        }
        guard capacity >= bytes.count else { throw sizeError(capacity) }
        bytes.withUnsafeBytes { buffer.copyMemory(from: $0.baseAddress!, byteCount: $0.count) }
        return bytes.count
    }

    private func sizeError(_ capacity: Int) -> AudioToolboxError {
        AudioToolboxError(kAudioFormatBadPropertySizeError, "the value is \(byteCount) bytes, the buffer \(capacity)")
    }

    /// The bytes of one value of a fixed-size type.
    static func of<T: BitwiseCopyable>(_ value: T) -> AudioFormatValue {
        .fixed(withUnsafeBytes(of: value) { Array($0) })
    }

    /// The bytes of an array of a fixed-size type.
    static func array<T: BitwiseCopyable>(_ items: [T]) -> AudioFormatValue {
        .array(items.withUnsafeBytes { Array($0) }, itemSize: MemoryLayout<T>.stride)
    }
}

/// The properties jaq answers, by ID.
enum AudioFormatProperty {
    static func value(_ id: AudioFormatPropertyID, specifier: AudioFormatSpecifier) throws -> AudioFormatValue {
        switch id {
        case kAudioFormatProperty_FormatInfo:
            return .fixed([UInt8](repeating: 0, count: MemoryLayout<AudioStreamBasicDescription>.size))
        case kAudioFormatProperty_FormatName:
            return .string(try formatName(specifier.value(AudioStreamBasicDescription.self, named: "an AudioStreamBasicDescription")))
        case kAudioFormatProperty_FormatIsVBR, kAudioFormatProperty_FormatIsExternallyFramed:
            let format = try specifier.value(AudioStreamBasicDescription.self, named: "an AudioStreamBasicDescription")
            return .of(UInt32(try isVariablePacketSize(format) ? 1 : 0))
        case kAudioFormatProperty_EncodeFormatIDs:
            try specifier.requireNone()
            return .array(encodeFormatIDs)
        case kAudioFormatProperty_DecodeFormatIDs:
            try specifier.requireNone()
            return .array(decodeFormatIDs)
        case kAudioFormatProperty_AvailableEncodeSampleRates:
            return .array(try encodeSampleRates(specifier.value(AudioFormatID.self, named: "a format ID")))
        case kAudioFormatProperty_AvailableEncodeBitRates:
            return .array(try encodeBitRates(specifier.value(AudioFormatID.self, named: "a format ID")))
        case kAudioFormatProperty_ChannelLayoutForTag:
            return .variable(try layoutForTag(specifier.value(AudioChannelLayoutTag.self, named: "an AudioChannelLayoutTag")))
        case kAudioFormatProperty_ChannelLayoutForBitmap:
            return .variable(try layoutForBitmap(specifier.value(UInt32.self, named: "a channel bitmap")))
        case kAudioFormatProperty_NumberOfChannelsForLayout:
            return .of(UInt32(try layout(of: specifier).channelCount))
        case kAudioFormatProperty_ChannelLayoutName:
            return .string(try layoutName(layout(of: specifier)))
        default:
            throw AudioToolboxError(kAudioFormatUnsupportedPropertyError, "property \(fourCharacterCode(id)) is not answered here")
        }
    }
}
