/* text/sentencepiece.h over libsentencepiece's C++ SentencePieceProcessor. Each function catches
 * every exception (std::bad_alloc, and whatever else the library or the standard library throws)
 * and turns it into a vit_error; the library's own failures come back as a util::Status, whose
 * message is kept on one line. Ids are range-checked here before the library sees them: an id
 * out of range makes IdToPiece abort in protobuf's CHECK rather than fail.
 *
 * Compiled by the C++ compiler when the build has the library (VIT_SENTENCEPIECE); in a build
 * without it this file is empty (the Makefile compiles it as C then, so no C++ compiler is
 * needed) and text/sentencepiece.c refuses models in its place. */
#ifdef VIT_SENTENCEPIECE

#include <sentencepiece_processor.h>

#include <climits>
#include <cstring>
#include <exception>
#include <new>
#include <string>
#include <vector>

extern "C" {
#include "text/sentencepiece.h"
}

#ifndef VIT_SENTENCEPIECE_VERSION /* the Makefile passes pkg-config's --modversion */
#define VIT_SENTENCEPIECE_VERSION "(version unknown)"
#endif

struct spm {
    sentencepiece::SentencePieceProcessor proc;
    std::string name; /* what errors call the model: its path */
};

namespace {

/* A library message on one line, without the source location its internal errors start with
 * ("./src/sentencepiece_processor.cc(232) [...]": of no use to whoever reads vit's error). */
std::string one_line(const char *msg) {
    std::string s = msg ? msg : "";
    for (char &c : s)
        if (c == '\n' || c == '\r') c = ' ';
    const size_t src = s.find("./src/");
    if (src != std::string::npos) s.erase(src);
    while (!s.empty() && (s.back() == ' ' || s.back() == ':')) s.pop_back();
    return s;
}

int fail_exception(vit_error *err, const std::string &name, const char *what) {
    return vit_fail(err, "%s: %s", name.c_str(), one_line(what).c_str());
}

/* The catch clauses every entry point shares. */
#define SPM_CATCH(err, name)                                                                       \
    catch (const std::bad_alloc &) {                                                               \
        return vit_fail(err, "%s: out of memory", (name).c_str());                                 \
    }                                                                                              \
    catch (const std::exception &e) {                                                              \
        return fail_exception(err, name, e.what());                                                \
    }                                                                                              \
    catch (...) {                                                                                  \
        return vit_fail(err, "%s: an unknown C++ exception in libsentencepiece", (name).c_str());  \
    }

/* NormalizerSpec { bool add_dummy_prefix = 3; } inside ModelProto { NormalizerSpec
 * normalizer_spec = 3; }, as protobuf's wire format: field 3 length-delimited (0x1a) of 2 bytes,
 * holding field 3 varint (0x18) = 0. A protobuf parser merges a second occurrence of a singular
 * message field into the first, so these bytes appended to a serialized model set that one
 * field and keep the rest: what transformers does with ModelProto.MergeFrom before loading. */
const char no_dummy_prefix[] = "\x1a\x02\x18\x00";

} // namespace

extern "C" const char *spm_library(void) {
    return "libsentencepiece " VIT_SENTENCEPIECE_VERSION;
}

extern "C" int spm_load_memory(const void *data, size_t size, const char *name, unsigned flags,
                               spm **out, vit_error *err) {
    *out = nullptr;
    const std::string label = name ? name : "SentencePiece model";
    try {
        std::string bytes(static_cast<const char *>(data), size);
        if (flags & SPM_NO_DUMMY_PREFIX) bytes.append(no_dummy_prefix, sizeof no_dummy_prefix - 1);
        spm *m = new spm;
        m->name = label;
        const sentencepiece::util::Status st = m->proc.LoadFromSerializedProto(bytes);
        if (!st.ok()) {
            const std::string msg = one_line(st.message());
            delete m;
            /* ParseFromArray failing has no message of its own: the bytes are no ModelProto */
            return vit_fail(err, "%s: not a SentencePiece model%s%s", label.c_str(),
                            msg.empty() ? "" : " (libsentencepiece: ", msg.empty() ? "" : ")");
        }
        if (m->proc.GetPieceSize() <= 0) {
            delete m;
            return vit_fail(err, "%s: a SentencePiece model without pieces", label.c_str());
        }
        *out = m;
        return 0;
    }
    SPM_CATCH(err, label)
}

extern "C" void spm_free(spm *m) {
    delete m;
}

extern "C" int spm_encode(const spm *m, const char *text, size_t len, int32_t *ids, int cap,
                          vit_error *err) {
    try {
        std::vector<int> got;
        const sentencepiece::util::Status st =
            m->proc.Encode(std::string_view(len ? text : "", len), &got);
        if (!st.ok())
            return vit_fail(err, "%s: encoding failed: %s", m->name.c_str(),
                            one_line(st.message()).c_str());
        if (got.size() > INT_MAX)
            return vit_fail(err, "%s: a text of more than %d pieces", m->name.c_str(), INT_MAX);
        const size_t n = got.size() < static_cast<size_t>(cap > 0 ? cap : 0)
                             ? got.size()
                             : static_cast<size_t>(cap > 0 ? cap : 0);
        for (size_t i = 0; i < n; i++) ids[i] = got[i];
        return static_cast<int>(got.size());
    }
    SPM_CATCH(err, m->name)
}

extern "C" int spm_decode(const spm *m, const int32_t *ids, int n, char *out, size_t size,
                          vit_error *err) {
    try {
        const int vocab = m->proc.GetPieceSize();
        std::vector<int> v(n > 0 ? static_cast<size_t>(n) : 0);
        for (size_t i = 0; i < v.size(); i++) {
            if (ids[i] < 0 || ids[i] >= vocab)
                return vit_fail(err, "%s: id %d is out of range (the vocabulary has %d)",
                                m->name.c_str(), ids[i], vocab);
            v[i] = ids[i];
        }
        std::string text;
        const sentencepiece::util::Status st = m->proc.Decode(v, &text);
        if (!st.ok())
            return vit_fail(err, "%s: decoding failed: %s", m->name.c_str(),
                            one_line(st.message()).c_str());
        if (text.size() > INT_MAX)
            return vit_fail(err, "%s: a decoded text of more than %d bytes", m->name.c_str(),
                            INT_MAX);
        if (size > 0) {
            const size_t k = text.size() < size - 1 ? text.size() : size - 1;
            memcpy(out, text.data(), k);
            out[k] = '\0';
        }
        return static_cast<int>(text.size());
    }
    SPM_CATCH(err, m->name)
}

/* The accessors below call only what cannot throw for ids in range: IdToPiece returns a
 * reference into the loaded model, and PieceToId looks up a hash map of it. Still, each is
 * guarded, since a C caller cannot receive an exception. */

extern "C" const char *spm_piece(const spm *m, int id) {
    try {
        if (id < 0 || id >= m->proc.GetPieceSize()) return nullptr;
        return m->proc.IdToPiece(id).c_str();
    } catch (...) {
        return nullptr;
    }
}

extern "C" int spm_piece_id(const spm *m, const char *piece) {
    try {
        /* PieceToId answers the unk id for a piece it does not have: told apart by its text */
        const int id = m->proc.PieceToId(piece);
        if (id < 0 || id >= m->proc.GetPieceSize() || m->proc.IdToPiece(id) != piece) return -1;
        return id;
    } catch (...) {
        return -1;
    }
}

extern "C" int spm_vocab_size(const spm *m) {
    try {
        return m->proc.GetPieceSize();
    } catch (...) {
        return 0;
    }
}

/* The special ids as the trainer set them; -1 when disabled (or not a piece: a model edited by
 * hand can name an id it does not have). */
static int special_id(const spm *m, int id) {
    return id >= 0 && id < spm_vocab_size(m) ? id : -1;
}

extern "C" int spm_unk_id(const spm *m) {
    try {
        return special_id(m, m->proc.unk_id());
    } catch (...) {
        return -1;
    }
}

extern "C" int spm_bos_id(const spm *m) {
    try {
        return special_id(m, m->proc.bos_id());
    } catch (...) {
        return -1;
    }
}

extern "C" int spm_eos_id(const spm *m) {
    try {
        return special_id(m, m->proc.eos_id());
    } catch (...) {
        return -1;
    }
}

extern "C" int spm_pad_id(const spm *m) {
    try {
        return special_id(m, m->proc.pad_id());
    } catch (...) {
        return -1;
    }
}

#endif /* VIT_SENTENCEPIECE */
