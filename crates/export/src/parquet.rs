//! Flow records as a Parquet dataset: typed columns, Hive-style hour partitions, files that
//! appear whole under their final names and are never written over.
//!
//! # Layout
//!
//! ```text
//! DIR/_rampart_dataset                                  marker (what the directory is)
//! DIR/date=2024-05-01/hour=13/part-<run>-<n>.parquet    records whose `first` is in that hour (UTC)
//! ```
//!
//! `<run>` is unique per run (UTC start time, process id and 32 random bits), `<n>` counts the
//! run's files from 0, so any number of runs, on one host or many, write into one directory
//! without clashing. A file is written under a hidden temporary name
//! (`.part-<run>-<n>.parquet.tmp` beside it), synced, and only then linked to its final name,
//! which must not exist; a crash leaves at most a hidden temporary file, which readers skip
//! (DuckDB's `*.parquet` glob does not match it; Spark and Trino skip names starting with a
//! dot) and a later run accepts in the directory.
//!
//! # Columns
//!
//! Every field a JSON record of the dataset's [`Schema`] can have
//! ([`crate::json_field_names`]), same names and order, then the addresses' numeric forms.
//! Each field's type goes by its name (the table covers both schemas):
//!
//! | fields | Parquet type |
//! |---|---|
//! | `first`, `last` (v2: `ts`, `ts_end`) | INT64 TIMESTAMP(MICROS, isAdjustedToUTC=true) |
//! | `duration` and `rtt_*_min/median/max` | DOUBLE, seconds (as in JSON) |
//! | `packets_*`, `bytes_*`, `rtt_*_count`, the TCP health counters (`retrans_fwd`, ...); v2: `orig_pkts`, `orig_wire_bytes`, `rtt_*_samples`, `rtt_*_us`, `orig_retrans`, ... | INT64 |
//! | `sport`, `dport`, `icmp_id` (v2: `orig_p`, `resp_p`) | INT32 |
//! | `assured` | BOOLEAN |
//! | every other field (`proto`, `src`, `dst`, `community_id`, `uid`, `tcp_flags_*`, `end_reason`, `conn_state`, `history`, `app`, ...) | BYTE_ARRAY STRING, the JSON value's text |
//! | `src_ip_v4`, `dst_ip_v4` (v2: `orig_ip_v4`, `resp_ip_v4`) | INT64: an IPv4 address as its 32-bit number; null for IPv6 |
//! | `src_ip_bin`, `dst_ip_bin` (v2: `orig_ip_bin`, `resp_ip_bin`) | FIXED_LEN_BYTE_ARRAY(16): the address in network order, IPv4 as `::ffff:a.b.c.d` |
//!
//! A field JSON leaves out is null; the columns that are in every JSON record (the
//! addresses, ports and protocol, the times, packet and byte counts, `uid`, `end_reason`,
//! the address forms) are `required`. `uid` is computed with the seed given to
//! [`DatasetWriter::with_uid_seed`] (as the JSON writer's), so the two agree.
//! Compression is snappy (pure Rust); dictionary encoding and statistics are on.
//!
//! # Row groups and files
//!
//! Records are buffered per partition and written [`ROW_GROUP_ROWS`] at a time as one row
//! group; a file takes at most [`GROUPS_PER_FILE`] row groups. A partition's file is closed
//! when that many were written, when a record two hours later opens a newer partition, when
//! more than [`OPEN_PARTITIONS`] partitions are open (the least recently written one), and at
//! [`DatasetWriter::finish`]. More than [`BUFFERED_ROWS`] buffered rows in all writes the
//! largest buffer out as a (smaller) row group, which bounds memory.
#![forbid(unsafe_code)]

use std::collections::HashMap;
use std::fs::{self, File};
use std::io::{self, BufWriter};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use ::parquet::basic::Compression;
use ::parquet::data_type::{
    BoolType, ByteArray, ByteArrayType, DoubleType, FixedLenByteArray, FixedLenByteArrayType,
    Int32Type, Int64Type,
};
use ::parquet::file::properties::WriterProperties;
use ::parquet::file::writer::SerializedFileWriter;
use ::parquet::schema::types::Type;
use bytes::Bytes;
use rampart_engine::FlowRecord;
use rampart_wire::IpFamily;

use crate::{FlowFormat, Schema, Value, View, num};

/// Rows in a full row group: 128 Ki. Large enough that a scan reads long runs of each column
/// (a few MiB compressed, the size DuckDB's own writer picks, 122,880 rows) and that engines
/// splitting work by row group get whole-file-sized tasks; small enough that the rows a
/// partition buffers before writing stay tens of MiB.
pub const ROW_GROUP_ROWS: usize = 128 * 1024;
/// Row groups in one file before it is closed and the partition's next rows go to a new one.
pub const GROUPS_PER_FILE: usize = 8;
/// Partitions with an open file at once.
pub const OPEN_PARTITIONS: usize = 24;
/// Rows buffered over all partitions before the largest buffer is written out.
pub const BUFFERED_ROWS: usize = 2 * ROW_GROUP_ROWS;
/// The marker file a dataset directory holds.
pub const MARKER: &str = "_rampart_dataset";

/// A column's Parquet type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    /// BYTE_ARRAY (STRING).
    Text,
    /// INT32.
    Int32,
    /// INT64.
    Int64,
    /// INT64 TIMESTAMP(MICROS, UTC).
    Timestamp,
    /// DOUBLE seconds.
    Seconds,
    /// BOOLEAN.
    Bool,
    /// FIXED_LEN_BYTE_ARRAY(16).
    Addr16,
}

/// Every record field's column, by name (the fields of both schemas): type, and whether it
/// may be null (JSON leaves the field out of some records). A test holds that every field of
/// either schema is here once, and nothing else.
const COLUMNS: &[(&str, Kind, bool)] = &[
    // Schema::Rampart.
    ("proto", Kind::Text, false),
    ("src", Kind::Text, false),
    ("sport", Kind::Int32, false),
    ("dst", Kind::Text, false),
    ("dport", Kind::Int32, false),
    ("community_id", Kind::Text, true),
    ("first", Kind::Timestamp, false),
    ("last", Kind::Timestamp, false),
    ("duration", Kind::Seconds, false),
    ("packets_fwd", Kind::Int64, false),
    ("bytes_fwd", Kind::Int64, false),
    ("packets_rev", Kind::Int64, false),
    ("bytes_rev", Kind::Int64, false),
    ("tcp_flags_fwd", Kind::Text, true),
    ("tcp_flags_rev", Kind::Text, true),
    ("icmp_id", Kind::Int32, true),
    ("end_reason", Kind::Text, false),
    ("rtt_src_count", Kind::Int64, true),
    ("rtt_src_min", Kind::Seconds, true),
    ("rtt_src_median", Kind::Seconds, true),
    ("rtt_src_max", Kind::Seconds, true),
    ("rtt_dst_count", Kind::Int64, true),
    ("rtt_dst_min", Kind::Seconds, true),
    ("rtt_dst_median", Kind::Seconds, true),
    ("rtt_dst_max", Kind::Seconds, true),
    ("app", Kind::Text, true),
    ("app_by", Kind::Text, true),
    ("sni", Kind::Text, true),
    ("alpn", Kind::Text, true),
    ("http_host", Kind::Text, true),
    ("user_agent", Kind::Text, true),
    ("dns_query", Kind::Text, true),
    ("ssh_banner", Kind::Text, true),
    ("ct_state", Kind::Text, true),
    ("tcp_state", Kind::Text, true),
    ("assured", Kind::Bool, true),
    ("verdict", Kind::Text, true),
    ("rule", Kind::Text, true),
    ("uid", Kind::Text, false),
    ("conn_state", Kind::Text, true),
    ("history", Kind::Text, true),
    ("retrans_fwd", Kind::Int64, true),
    ("retrans_rev", Kind::Int64, true),
    ("out_of_order_fwd", Kind::Int64, true),
    ("out_of_order_rev", Kind::Int64, true),
    ("lost_fwd", Kind::Int64, true),
    ("lost_rev", Kind::Int64, true),
    ("zero_window_fwd", Kind::Int64, true),
    ("zero_window_rev", Kind::Int64, true),
    ("tunnel", Kind::Text, true),
    // Schema::V2's other names.
    ("ts", Kind::Timestamp, false),
    ("ts_end", Kind::Timestamp, false),
    ("orig_h", Kind::Text, false),
    ("orig_p", Kind::Int32, false),
    ("resp_h", Kind::Text, false),
    ("resp_p", Kind::Int32, false),
    ("orig_pkts", Kind::Int64, false),
    ("orig_wire_bytes", Kind::Int64, false),
    ("resp_pkts", Kind::Int64, false),
    ("resp_wire_bytes", Kind::Int64, false),
    ("tcp_flags_orig", Kind::Text, true),
    ("tcp_flags_resp", Kind::Text, true),
    ("orig_retrans", Kind::Int64, true),
    ("orig_out_of_order", Kind::Int64, true),
    ("orig_lost", Kind::Int64, true),
    ("orig_zero_window", Kind::Int64, true),
    ("resp_retrans", Kind::Int64, true),
    ("resp_out_of_order", Kind::Int64, true),
    ("resp_lost", Kind::Int64, true),
    ("resp_zero_window", Kind::Int64, true),
    ("rtt_orig_samples", Kind::Int64, true),
    ("rtt_orig_min_us", Kind::Int64, true),
    ("rtt_orig_median_us", Kind::Int64, true),
    ("rtt_orig_max_us", Kind::Int64, true),
    ("rtt_resp_samples", Kind::Int64, true),
    ("rtt_resp_min_us", Kind::Int64, true),
    ("rtt_resp_median_us", Kind::Int64, true),
    ("rtt_resp_max_us", Kind::Int64, true),
];

/// The columns after the record's fields: the addresses' numeric forms (initiator, then
/// responder), named as the schema names its addresses.
fn address_columns(schema: Schema) -> [(&'static str, Kind, bool); 4] {
    let (v4_a, bin_a, v4_b, bin_b) = match schema {
        Schema::Rampart => ("src_ip_v4", "src_ip_bin", "dst_ip_v4", "dst_ip_bin"),
        Schema::V2 => ("orig_ip_v4", "orig_ip_bin", "resp_ip_v4", "resp_ip_bin"),
    };
    [
        (v4_a, Kind::Int64, true),
        (bin_a, Kind::Addr16, false),
        (v4_b, Kind::Int64, true),
        (bin_b, Kind::Addr16, false),
    ]
}

/// A record field's column type and nullability (a name missing from [`COLUMNS`], which a
/// test rules out, would be a nullable text column).
fn field_column(name: &'static str) -> (&'static str, Kind, bool) {
    COLUMNS.iter().copied().find(|(n, _, _)| *n == name).unwrap_or((name, Kind::Text, true))
}

/// The column names a dataset written in `schema` has, in order.
pub fn column_names(schema: Schema) -> impl Iterator<Item = &'static str> {
    columns(schema).map(|(n, _, _)| n)
}

fn columns(schema: Schema) -> impl Iterator<Item = (&'static str, Kind, bool)> {
    schema.fields(FlowFormat::Json).map(|&(n, _)| field_column(n)).chain(address_columns(schema))
}

/// The Parquet schema (message type) of a dataset written in `schema`.
fn message_type(schema: Schema) -> String {
    let mut m = String::from("message rampart_flow {\n");
    for (name, kind, nullable) in columns(schema) {
        let rep = if nullable { "optional" } else { "required" };
        let ty = match kind {
            Kind::Text => "binary",
            Kind::Int32 => "int32",
            Kind::Int64 => "int64",
            Kind::Timestamp => "int64",
            Kind::Seconds => "double",
            Kind::Bool => "boolean",
            Kind::Addr16 => "fixed_len_byte_array(16)",
        };
        let logical = match kind {
            Kind::Text => " (STRING)",
            Kind::Timestamp => " (TIMESTAMP(MICROS,true))",
            _ => "",
        };
        m.push_str(&format!("  {rep} {ty} {name}{logical};\n"));
    }
    m.push('}');
    m
}

/// Why a directory cannot take a dataset.
#[derive(Debug)]
pub enum OpenError {
    /// The path holds something that is not part of a rampart dataset (`path`, and why).
    NotADataset(PathBuf, String),
    /// The directory could not be read or created.
    Io(PathBuf, io::Error),
}

impl std::fmt::Display for OpenError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::NotADataset(p, why) => write!(
                f,
                "{}: {why}; a Parquet output directory holds only a rampart dataset \
                 ({MARKER}, date=YYYY-MM-DD/hour=HH/part-*.parquet): refusing to write into it",
                p.display()
            ),
            Self::Io(p, e) => write!(f, "{}: {e}", p.display()),
        }
    }
}

impl std::error::Error for OpenError {}

/// Checks that `dir` is empty, missing, or holds only a rampart dataset: the marker,
/// `date=YYYY-MM-DD` directories of `hour=HH` directories of `part-*.parquet` files (and
/// hidden `.part-*.parquet.tmp` files a crashed run left). Names the first path that is not.
pub fn check_dataset_dir(dir: &Path) -> Result<(), OpenError> {
    let meta = match fs::symlink_metadata(dir) {
        Ok(m) => m,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(OpenError::Io(dir.to_path_buf(), e)),
    };
    let meta = if meta.file_type().is_symlink() {
        fs::metadata(dir).map_err(|e| OpenError::Io(dir.to_path_buf(), e))?
    } else {
        meta
    };
    if !meta.is_dir() {
        return Err(OpenError::NotADataset(dir.to_path_buf(), "not a directory".into()));
    }
    let not = |p: PathBuf, why: &str| Err(OpenError::NotADataset(p, why.to_string()));
    for entry in read_dir(dir)? {
        let (path, name, is_dir) = entry;
        if name == MARKER && !is_dir {
            continue;
        }
        if !is_dir || !is_date(&name) {
            return not(path, "not part of a rampart dataset");
        }
        for (hpath, hname, h_is_dir) in read_dir(&path)? {
            if !h_is_dir || !is_hour(&hname) {
                return not(hpath, "not part of a rampart dataset (expected hour=HH)");
            }
            for (fpath, fname, f_is_dir) in read_dir(&hpath)? {
                if f_is_dir || !is_part_name(&fname) {
                    return not(fpath, "not part of a rampart dataset (expected part-*.parquet)");
                }
            }
        }
    }
    Ok(())
}

/// A directory's entries: path, name (lossy) and whether it is a directory (not following
/// links: a link is not part of a dataset).
fn read_dir(dir: &Path) -> Result<Vec<(PathBuf, String, bool)>, OpenError> {
    let io_err = |e| OpenError::Io(dir.to_path_buf(), e);
    let mut out = Vec::new();
    for e in fs::read_dir(dir).map_err(io_err)? {
        let e = e.map_err(io_err)?;
        let is_dir = e.file_type().map_err(io_err)?.is_dir();
        out.push((e.path(), e.file_name().to_string_lossy().into_owned(), is_dir));
    }
    out.sort();
    Ok(out)
}

fn is_date(name: &str) -> bool {
    let Some(d) = name.strip_prefix("date=") else { return false };
    let b = d.as_bytes();
    b.len() == 10
        && b.iter()
            .enumerate()
            .all(|(i, c)| if i == 4 || i == 7 { *c == b'-' } else { c.is_ascii_digit() })
}

fn is_hour(name: &str) -> bool {
    name.strip_prefix("hour=")
        .is_some_and(|h| h.len() == 2 && h.bytes().all(|c| c.is_ascii_digit()))
}

fn is_part_name(name: &str) -> bool {
    (name.starts_with("part-") && name.ends_with(".parquet"))
        || (name.starts_with(".part-") && name.ends_with(".parquet.tmp"))
}

/// One column's buffered values (non-null ones only) and, for a nullable column, its
/// definition levels (1 present, 0 null).
struct Col {
    kind: Kind,
    nullable: bool,
    def: Vec<i16>,
    data: Data,
}

enum Data {
    /// Concatenated bytes and each value's end (text and 16-byte addresses).
    Bytes(Vec<u8>, Vec<usize>),
    I32(Vec<i32>),
    I64(Vec<i64>),
    F64(Vec<f64>),
    Bool(Vec<bool>),
}

impl Col {
    fn new(kind: Kind, nullable: bool) -> Self {
        let data = match kind {
            Kind::Text | Kind::Addr16 => Data::Bytes(Vec::new(), Vec::new()),
            Kind::Int32 => Data::I32(Vec::new()),
            Kind::Int64 | Kind::Timestamp => Data::I64(Vec::new()),
            Kind::Seconds => Data::F64(Vec::new()),
            Kind::Bool => Data::Bool(Vec::new()),
        };
        Self { kind, nullable, def: Vec::new(), data }
    }

    /// Adds a null (or, for a required column, which never gets one from a record, a zero
    /// value so the rows stay aligned).
    fn push_null(&mut self) {
        if self.nullable {
            self.def.push(0);
            return;
        }
        match &mut self.data {
            Data::Bytes(b, ends) => {
                if self.kind == Kind::Addr16 {
                    b.extend_from_slice(&[0; 16]);
                }
                ends.push(b.len());
            }
            Data::I32(v) => v.push(0),
            Data::I64(v) => v.push(0),
            Data::F64(v) => v.push(0.0),
            Data::Bool(v) => v.push(false),
        }
    }

    fn present(&mut self) {
        if self.nullable {
            self.def.push(1);
        }
    }

    /// Adds a record field's value, converted to the column's type.
    fn push(&mut self, v: Value<'_>) {
        match (&mut self.data, v) {
            (_, Value::Absent) => return self.push_null(),
            (Data::I32(c), Value::Int(n)) => c.push(i32::try_from(n).unwrap_or(i32::MAX)),
            (Data::I64(c), Value::Int(n)) => c.push(i64::try_from(n).unwrap_or(i64::MAX)),
            (Data::I64(c), Value::Time(ns)) => c.push((ns / 1000) as i64),
            // Seconds with microseconds, as JSON writes `duration`.
            (Data::F64(c), Value::Time(ns)) => c.push((ns / 1000) as f64 / 1e6),
            (Data::F64(c), Value::Rtt(ns)) => c.push(ns as f64 / 1e9),
            (Data::Bool(c), Value::Bool(b)) => c.push(b),
            (Data::Bytes(b, ends), v) if self.kind == Kind::Text => {
                text(b, v);
                ends.push(b.len());
            }
            // A value of another type than the column's: never made by the field lists (a
            // test writes every kind of record); kept as a null rather than a wrong value.
            _ => return self.push_null(),
        }
        self.present();
    }

    fn push_addr(&mut self, a: [u8; 16]) {
        if let Data::Bytes(b, ends) = &mut self.data {
            b.extend_from_slice(&a);
            ends.push(b.len());
        }
        self.present();
    }

    fn push_i64(&mut self, v: Option<i64>) {
        match (&mut self.data, v) {
            (Data::I64(c), Some(v)) => {
                c.push(v);
                self.present();
            }
            _ => self.push_null(),
        }
    }

    /// Writes the buffered values as this column's chunk of a row group, and empties the
    /// buffer.
    fn write(
        &mut self,
        w: &mut ::parquet::file::writer::SerializedColumnWriter<'_>,
    ) -> ::parquet::errors::Result<()> {
        let def = self.nullable.then_some(self.def.as_slice());
        match &mut self.data {
            Data::Bytes(b, ends) => {
                // The bytes go to the encoder; the next group's buffer starts as large.
                let cap = b.capacity();
                let all = Bytes::from(std::mem::replace(b, Vec::with_capacity(cap)));
                let mut start = 0;
                let values: Vec<ByteArray> = ends
                    .iter()
                    .map(|&end| {
                        let v = ByteArray::from(all.slice(start..end));
                        start = end;
                        v
                    })
                    .collect();
                ends.clear();
                if self.kind == Kind::Addr16 {
                    let fixed: Vec<FixedLenByteArray> =
                        values.into_iter().map(FixedLenByteArray::from).collect();
                    w.typed::<FixedLenByteArrayType>().write_batch(&fixed, def, None)?;
                } else {
                    w.typed::<ByteArrayType>().write_batch(&values, def, None)?;
                }
            }
            Data::I32(v) => {
                w.typed::<Int32Type>().write_batch(v, def, None)?;
                v.clear();
            }
            Data::I64(v) => {
                w.typed::<Int64Type>().write_batch(v, def, None)?;
                v.clear();
            }
            Data::F64(v) => {
                w.typed::<DoubleType>().write_batch(v, def, None)?;
                v.clear();
            }
            Data::Bool(v) => {
                w.typed::<BoolType>().write_batch(v, def, None)?;
                v.clear();
            }
        }
        self.def.clear();
        Ok(())
    }

    /// Forgets the buffered values (a row group that could not be written).
    fn clear(&mut self) {
        match &mut self.data {
            Data::Bytes(b, ends) => {
                b.clear();
                ends.clear();
            }
            Data::I32(v) => v.clear(),
            Data::I64(v) => v.clear(),
            Data::F64(v) => v.clear(),
            Data::Bool(v) => v.clear(),
        }
        self.def.clear();
    }
}

/// A field's value as the text JSON has inside its quotes (or the number it writes), unescaped.
fn text(l: &mut Vec<u8>, v: Value<'_>) {
    match v {
        Value::Absent => {}
        Value::Bool(b) => l.extend_from_slice(if b { b"true" } else { b"false" }),
        Value::Int(n) => num::int(l, n),
        Value::Time(ns) => crate::epoch(l, ns),
        Value::Rtt(ns) => crate::num::secs_frac(l, ns, 9),
        Value::Name(s) | Value::Text(s) => l.extend_from_slice(s.as_bytes()),
        Value::Cid(c) => l.extend_from_slice(c.as_str().as_bytes()),
        Value::Uid(u) => crate::uid_text(l, u),
        Value::Addr(family, a) => num::slot_addr(l, family, a),
        Value::Proto(p, family) => match crate::proto_name(p, family) {
            Some(name) => l.extend_from_slice(name.as_bytes()),
            None => num::int(l, p),
        },
        Value::Flags(f) => crate::flags(l, f),
        Value::Label(label) => crate::label_text(l, label),
    }
}

/// An address slot as 16 bytes (IPv4 mapped into IPv6) and, for IPv4, its number.
fn addr_forms(family: IpFamily, a: &[u8; 16]) -> ([u8; 16], Option<i64>) {
    if family == IpFamily::V4 {
        let v4 = [a[0], a[1], a[2], a[3]];
        let mut m = [0u8; 16];
        m[10] = 0xff;
        m[11] = 0xff;
        m[12..].copy_from_slice(&v4);
        (m, Some(i64::from(u32::from_be_bytes(v4))))
    } else {
        (*a, None)
    }
}

/// A file being written: the writer, its temporary and final names.
struct OpenFile {
    w: SerializedFileWriter<BufWriter<File>>,
    tmp: PathBuf,
    path: PathBuf,
    groups: usize,
    /// Rows in its row groups so far (counted as written; taken back if the file is lost).
    rows: u64,
}

/// One hour's partition: its buffered rows and its open file, if any.
struct Part {
    cols: Vec<Col>,
    rows: usize,
    file: Option<OpenFile>,
    last_use: u64,
}

/// What a [`DatasetWriter`] wrote.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Written {
    /// Records written (in closed files).
    pub rows: u64,
    /// The files, under their final names, in the order they were closed.
    pub files: Vec<PathBuf>,
}

/// Writes flow records into a Parquet dataset directory (see the [module](self)).
pub struct DatasetWriter {
    root: PathBuf,
    schema: Schema,
    type_: Arc<Type>,
    props: Arc<WriterProperties>,
    run: String,
    next_file: u64,
    parts: HashMap<u64, Part>,
    newest_hour: u64,
    clock: u64,
    buffered: usize,
    group_rows: usize,
    written: Written,
    /// The seed of the records' `uid`s.
    seed: u64,
}

impl DatasetWriter {
    /// A writer into `dir` of records in `schema`: checks that `dir` is missing, empty or a
    /// rampart dataset ([`check_dataset_dir`]), creates it and its marker.
    pub fn create(dir: &Path, schema: Schema) -> Result<Self, OpenError> {
        check_dataset_dir(dir)?;
        fs::create_dir_all(dir).map_err(|e| OpenError::Io(dir.to_path_buf(), e))?;
        let marker = dir.join(MARKER);
        if !marker.exists() {
            fs::write(
                &marker,
                "rampart flow records, a Parquet dataset: \
                 date=YYYY-MM-DD/hour=HH/part-<run>-<n>.parquet (hour of `first`, UTC)\n",
            )
            .map_err(|e| OpenError::Io(marker.clone(), e))?;
        }
        let type_ = ::parquet::schema::parser::parse_message_type(&message_type(schema))
            .map_err(|e| OpenError::Io(dir.to_path_buf(), io::Error::other(e)))?;
        let props = WriterProperties::builder()
            .set_compression(Compression::SNAPPY)
            .set_created_by(format!("rampart {}", env!("CARGO_PKG_VERSION")))
            .set_max_row_group_row_count(Some(ROW_GROUP_ROWS))
            .build();
        Ok(Self {
            root: dir.to_path_buf(),
            schema,
            type_: Arc::new(type_),
            props: Arc::new(props),
            run: run_id(),
            next_file: 0,
            parts: HashMap::new(),
            newest_hour: 0,
            clock: 0,
            buffered: 0,
            group_rows: ROW_GROUP_ROWS,
            written: Written::default(),
            seed: 0,
        })
    }

    /// Sets the rows per row group (tests use small ones); at least 1.
    pub fn with_row_group_rows(mut self, rows: usize) -> Self {
        self.group_rows = rows.max(1);
        self
    }

    /// Uses `seed` for the records' `uid`s, as [`crate::FlowWriter::with_uid_seed`] does
    /// (0 unless set).
    pub fn with_uid_seed(mut self, seed: u64) -> Self {
        self.seed = seed;
        self
    }

    /// This run's id, in each of its file names.
    pub fn run_id(&self) -> &str {
        &self.run
    }

    /// Adds one flow record to its partition (the hour of its first packet, UTC); writes a row
    /// group when the partition has a full one buffered.
    pub fn write(&mut self, r: &FlowRecord) -> io::Result<()> {
        let hour = r.flow.first.as_nanos() / 3_600_000_000_000;
        self.clock += 1;
        if !self.parts.contains_key(&hour) {
            self.open_partition(hour)?;
        }
        let schema = self.schema;
        let Some(part) = self.parts.get_mut(&hour) else { return Ok(()) };
        part.last_use = self.clock;
        let view = View::new(r, self.seed);
        let mut cols = part.cols.iter_mut();
        for (_, value) in schema.fields(FlowFormat::Json) {
            if let Some(c) = cols.next() {
                c.push(value(&view));
            }
        }
        let family = r.flow.key.family();
        for a in [view.src, view.dst] {
            let (bin, v4) = addr_forms(family, a);
            if let Some(c) = cols.next() {
                c.push_i64(v4);
            }
            if let Some(c) = cols.next() {
                c.push_addr(bin);
            }
        }
        part.rows += 1;
        self.buffered += 1;
        if part.rows >= self.group_rows {
            self.flush_group(hour)?;
        } else if self.buffered > BUFFERED_ROWS.max(2 * self.group_rows) {
            let biggest = self.parts.iter().max_by_key(|(_, p)| p.rows).map(|(h, _)| *h);
            if let Some(h) = biggest {
                self.flush_group(h)?;
            }
        }
        Ok(())
    }

    /// Starts buffering an hour; closes the partitions it makes old (two hours before the
    /// newest) and, past [`OPEN_PARTITIONS`], the least recently written one.
    fn open_partition(&mut self, hour: u64) -> io::Result<()> {
        let mut result = Ok(());
        if hour > self.newest_hour {
            self.newest_hour = hour;
            let old: Vec<u64> =
                self.parts.keys().copied().filter(|h| h + 2 <= self.newest_hour).collect();
            for h in old {
                result = result.and(self.close_partition(h));
            }
        }
        if self.parts.len() >= OPEN_PARTITIONS {
            let lru = self.parts.iter().min_by_key(|(_, p)| p.last_use).map(|(h, _)| *h);
            if let Some(h) = lru {
                result = result.and(self.close_partition(h));
            }
        }
        let cols = columns(self.schema).map(|(_, k, n)| Col::new(k, n)).collect();
        self.parts.insert(hour, Part { cols, rows: 0, file: None, last_use: self.clock });
        result
    }

    /// Writes a partition's buffered rows as a row group (opening its file if needed); closes
    /// the file when it has [`GROUPS_PER_FILE`] groups.
    fn flush_group(&mut self, hour: u64) -> io::Result<()> {
        let Some(part) = self.parts.get_mut(&hour) else { return Ok(()) };
        if part.rows == 0 {
            return Ok(());
        }
        if part.file.is_none() {
            let dir = self.root.join(partition_dir(hour));
            fs::create_dir_all(&dir).map_err(|e| named(&dir, e))?;
            let name = format!("part-{}-{}.parquet", self.run, self.next_file);
            self.next_file += 1;
            let tmp = dir.join(format!(".{name}.tmp"));
            let path = dir.join(name);
            let f = fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&tmp)
                .map_err(|e| named(&tmp, e))?;
            let w = SerializedFileWriter::new(
                BufWriter::with_capacity(1 << 20, f),
                Arc::clone(&self.type_),
                Arc::clone(&self.props),
            )
            .map_err(|e| named(&tmp, io::Error::other(e)))?;
            part.file = Some(OpenFile { w, tmp, path, groups: 0, rows: 0 });
        }
        let rows = std::mem::take(&mut part.rows);
        self.buffered -= rows;
        let Some(file) = part.file.as_mut() else { return Ok(()) };
        let res = (|| {
            let mut g = file.w.next_row_group()?;
            for c in &mut part.cols {
                match g.next_column()? {
                    Some(mut w) => {
                        c.write(&mut w)?;
                        w.close()?;
                    }
                    None => break,
                }
            }
            g.close().map(|_| ())
        })();
        if let Err(e) = res {
            // The file cannot be finished: its temporary name goes, its rows are lost (and
            // no longer counted as written), and the columns that were not written are
            // emptied so the partition's next group starts aligned.
            let tmp = file.tmp.clone();
            self.written.rows -= file.rows;
            part.file = None;
            part.cols.iter_mut().for_each(Col::clear);
            let _ = fs::remove_file(&tmp);
            return Err(named(&tmp, io::Error::other(e)));
        }
        file.groups += 1;
        file.rows += rows as u64;
        self.written.rows += rows as u64;
        if file.groups >= GROUPS_PER_FILE
            && let Some(f) = part.file.take()
        {
            self.close_file(f)?;
        }
        Ok(())
    }

    /// Finishes a file under its final name and counts it; a file that cannot be finished is
    /// gone, and its rows no longer count as written.
    fn close_file(&mut self, f: OpenFile) -> io::Result<()> {
        let rows = f.rows;
        match finish_file(f) {
            Ok(path) => {
                self.written.files.push(path);
                Ok(())
            }
            Err(e) => {
                self.written.rows -= rows;
                Err(e)
            }
        }
    }

    /// Writes out a partition's rows and closes its file.
    fn close_partition(&mut self, hour: u64) -> io::Result<()> {
        let flushed = self.flush_group(hour);
        let Some(mut part) = self.parts.remove(&hour) else { return flushed };
        self.buffered -= part.rows;
        let closed = match part.file.take() {
            Some(f) => self.close_file(f),
            None => Ok(()),
        };
        flushed.and(closed)
    }

    /// Writes every buffered row and closes every file (each under its final name). Goes on
    /// after a failure, so that the other partitions' records are kept, and returns the first
    /// error. The writer can take more records afterwards (into new files).
    pub fn finish(&mut self) -> io::Result<&Written> {
        let mut hours: Vec<u64> = self.parts.keys().copied().collect();
        hours.sort_unstable();
        let mut result = Ok(());
        for h in hours {
            result = result.and(self.close_partition(h));
        }
        result.map(|()| &self.written)
    }

    /// What was written so far (closed files).
    pub fn written(&self) -> &Written {
        &self.written
    }
}

impl Drop for DatasetWriter {
    /// Closes what is open: records are not lost when a caller forgot [`DatasetWriter::finish`].
    fn drop(&mut self) {
        let _ = self.finish();
    }
}

/// Finishes a file's footer, syncs it, and gives it its final name (never replacing a file).
fn finish_file(f: OpenFile) -> io::Result<PathBuf> {
    let OpenFile { w, tmp, path, .. } = f;
    let done = (|| {
        // The footer, then the buffer's rest.
        let buf = w.into_inner().map_err(io::Error::other)?;
        let file = buf.into_inner().map_err(|e| e.into_error())?;
        file.sync_all()
    })();
    if let Err(e) = done {
        let _ = fs::remove_file(&tmp);
        return Err(named(&tmp, e));
    }
    publish(&tmp, &path)?;
    Ok(path)
}

/// Gives `tmp` the name `path`, failing rather than replacing a file there: a hard link
/// (which fails if `path` exists), then the temporary name goes. Where the file system has no
/// hard links, a rename after checking that `path` is free.
fn publish(tmp: &Path, path: &Path) -> io::Result<()> {
    match fs::hard_link(tmp, path) {
        Ok(()) => fs::remove_file(tmp).map_err(|e| named(tmp, e)),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Err(named(path, e)),
        Err(_) if !path.exists() => fs::rename(tmp, path).map_err(|e| named(path, e)),
        Err(e) => Err(named(path, e)),
    }
}

fn named(p: &Path, e: io::Error) -> io::Error {
    io::Error::new(e.kind(), format!("{}: {e}", p.display()))
}

/// `date=YYYY-MM-DD/hour=HH` for hours since the epoch.
fn partition_dir(hour: u64) -> String {
    let secs = i64::try_from(hour * 3600).unwrap_or(i64::MAX);
    match jiff::Timestamp::from_second(secs) {
        Ok(t) => {
            let dt = t.to_zoned(jiff::tz::TimeZone::UTC).datetime();
            format!("date={:04}-{:02}-{:02}/hour={:02}", dt.year(), dt.month(), dt.day(), dt.hour())
        }
        // Beyond year 9999: still a valid partition name, grouped in the last hour.
        Err(_) => "date=9999-12-31/hour=23".to_string(),
    }
}

/// A run id unique across runs and hosts: UTC start time, process id, 32 random bits (from the
/// standard library's randomly keyed hasher).
fn run_id() -> String {
    use std::hash::{BuildHasher, Hasher};
    let now = jiff::Timestamp::now();
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_i128(now.as_nanosecond());
    h.write_u32(std::process::id());
    format!("{}-{}-{:08x}", now.strftime("%Y%m%dT%H%M%SZ"), std::process::id(), h.finish() as u32)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::json_field_names;
    use ::parquet::basic::{LogicalType, TimeUnit, TimestampType, Type as Physical};
    use ::parquet::file::reader::{FileReader, SerializedFileReader};
    use ::parquet::record::Field;
    use rampart_wire::Span;

    #[test]
    fn columns_are_the_record_fields_then_the_address_forms() {
        let mut all = Vec::new();
        for (schema, addrs) in [
            (Schema::V2, ["orig_ip_v4", "orig_ip_bin", "resp_ip_v4", "resp_ip_bin"]),
            (Schema::Rampart, ["src_ip_v4", "src_ip_bin", "dst_ip_v4", "dst_ip_bin"]),
        ] {
            let cols: Vec<_> = column_names(schema).collect();
            let fields: Vec<_> = json_field_names(schema).collect();
            assert_eq!(cols[..fields.len()], fields[..]);
            assert_eq!(cols[fields.len()..], addrs);
            // Every field has its own entry in the type table.
            for f in &fields {
                assert_eq!(COLUMNS.iter().filter(|(n, _, _)| n == f).count(), 1, "{f}");
            }
            all.extend(fields);
        }
        // And the table has nothing else.
        for (n, _, _) in COLUMNS {
            assert!(all.contains(n), "{n} is in no schema");
        }
    }

    #[test]
    fn partition_names() {
        assert_eq!(partition_dir(0), "date=1970-01-01/hour=00");
        // 2023-11-14 22:13:20 UTC.
        assert_eq!(partition_dir(1_700_000_000 / 3600), "date=2023-11-14/hour=22");
        assert!(is_date("date=2023-11-14") && !is_date("date=2023-1-14") && !is_date("x"));
        assert!(is_hour("hour=07") && !is_hour("hour=7"));
        assert!(is_part_name("part-a-0.parquet") && is_part_name(".part-a-0.parquet.tmp"));
        assert!(!is_part_name("data.parquet") && !is_part_name("part-a-0.csv"));
        let a = run_id();
        let b = run_id();
        assert_ne!(a, b);
        assert!(a.ends_with(&format!("-{}-{}", std::process::id(), &a[a.len() - 8..])));
    }

    #[test]
    fn address_forms() {
        let mut a = [0u8; 16];
        a[..4].copy_from_slice(&[10, 0, 0, 1]);
        let (bin, v4) = addr_forms(IpFamily::V4, &a);
        assert_eq!(v4, Some(0x0a00_0001));
        assert_eq!(std::net::Ipv6Addr::from(bin).to_string(), "::ffff:10.0.0.1");
        let six: std::net::Ipv6Addr = "fd77::2".parse().unwrap();
        assert_eq!(addr_forms(IpFamily::V6, &six.octets()), (six.octets(), None));
    }

    fn files_under(dir: &Path) -> Vec<PathBuf> {
        let mut out = Vec::new();
        let mut stack = vec![dir.to_path_buf()];
        while let Some(d) = stack.pop() {
            for e in fs::read_dir(&d).unwrap() {
                let p = e.unwrap().path();
                if p.is_dir() { stack.push(p) } else { out.push(p) }
            }
        }
        out.sort();
        out
    }

    fn rows(path: &Path) -> Vec<HashMap<String, Field>> {
        let r = SerializedFileReader::new(File::open(path).unwrap()).unwrap();
        r.get_row_iter(None)
            .unwrap()
            .map(|row| {
                row.unwrap().get_column_iter().map(|(n, f)| (n.clone(), f.clone())).collect()
            })
            .collect()
    }

    /// Records of every kind, row groups of 2: types, nulls, timestamps in microseconds,
    /// partitions by hour, and files that appear only when closed.
    #[test]
    fn writes_typed_columns_by_hour() {
        use crate::tests::{ended, tls_app, with_app};
        use rampart_flow::KeyKind;
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("ds");
        let mut w = DatasetWriter::create(&root, Schema::Rampart)
            .unwrap()
            .with_row_group_rows(2)
            .with_uid_seed(7);
        let mut tcp = ended(6, KeyKind::Ports, IpFamily::V4);
        let mut s = rampart_rtt::RttSummary::default();
        s.dirs[0] = rampart_rtt::DirSummary {
            count: 2,
            min: rampart_wire::Span::from_nanos(1_000),
            median: rampart_wire::Span::from_nanos(1_500),
            max: rampart_wire::Span::from_nanos(2_000),
        };
        tcp.rtt = Some(s);
        let records = [
            tcp,
            ended(17, KeyKind::Ports, IpFamily::V4),
            ended(58, KeyKind::Echo, IpFamily::V6),
            with_app(ended(6, KeyKind::Ports, IpFamily::V6), tls_app()),
            ended(47, KeyKind::Pair, IpFamily::V4),
        ];
        for r in &records {
            w.write(r).unwrap();
        }
        // Two full row groups are in the open file; nothing under a final name yet.
        assert!(files_under(&root).iter().all(|p| !p.to_string_lossy().ends_with(".parquet")));
        let mut later = ended(6, KeyKind::Ports, IpFamily::V4);
        later.flow.first += Span::from_secs(3 * 3_600);
        later.flow.last += Span::from_secs(3 * 3_600);
        w.write(&later).unwrap();
        let written = w.finish().unwrap().clone();
        assert_eq!(written.rows, 6);
        assert_eq!(written.files.len(), 2);
        let run = w.run_id().to_string();
        let first = root.join(format!("date=2023-11-14/hour=22/part-{run}-0.parquet"));
        let second = root.join(format!("date=2023-11-15/hour=01/part-{run}-1.parquet"));
        assert_eq!(written.files, [first.clone(), second.clone()]);
        assert_eq!(files_under(&root), [root.join(MARKER), first.clone(), second]);

        let reader = SerializedFileReader::new(File::open(&first).unwrap()).unwrap();
        let meta = reader.metadata();
        assert_eq!(meta.num_row_groups(), 3);
        assert_eq!(meta.file_metadata().num_rows(), 5);
        let schema = meta.file_metadata().schema_descr();
        let col = |name: &str| {
            (0..schema.num_columns())
                .map(|i| schema.column(i))
                .find(|c| c.name() == name)
                .unwrap_or_else(|| panic!("no column {name}"))
        };
        let ts = col("first");
        assert_eq!(ts.physical_type(), Physical::INT64);
        assert_eq!(
            ts.logical_type_ref(),
            Some(&LogicalType::Timestamp(TimestampType {
                is_adjusted_to_u_t_c: true,
                unit: TimeUnit::MICROS
            }))
        );
        assert_eq!(col("sport").physical_type(), Physical::INT32);
        assert_eq!(col("bytes_fwd").physical_type(), Physical::INT64);
        assert_eq!(col("duration").physical_type(), Physical::DOUBLE);
        assert_eq!(col("assured").physical_type(), Physical::BOOLEAN);
        assert_eq!(col("src_ip_bin").physical_type(), Physical::FIXED_LEN_BYTE_ARRAY);
        assert_eq!(col("src_ip_bin").type_length(), 16);
        assert_eq!(col("app").logical_type_ref(), Some(&LogicalType::String));
        assert_eq!(col("uid").logical_type_ref(), Some(&LogicalType::String));
        assert_eq!(col("retrans_fwd").physical_type(), Physical::INT64);
        assert!(
            !col("src").self_type().is_optional() && col("rtt_src_min").self_type().is_optional()
        );
        assert!(!col("uid").self_type().is_optional() && col("history").self_type().is_optional());

        let rows = rows(&first);
        assert_eq!(rows.len(), 5);
        let t = &rows[0];
        assert_eq!(t["proto"], Field::Str("tcp".into()));
        assert_eq!(t["src"], Field::Str("10.0.0.2".into()));
        assert_eq!(t["sport"], Field::Int(80));
        assert_eq!(t["community_id"], Field::Str("1:3k1SoWXs/FltHw2aBCgUTgbDQF4=".into()));
        assert_eq!(t["first"], Field::TimestampMicros(1_700_000_000_000_001));
        assert_eq!(t["last"], Field::TimestampMicros(1_700_000_001_500_000));
        assert_eq!(t["duration"], Field::Double(1.499999));
        assert_eq!(t["bytes_rev"], Field::Long(1500));
        assert_eq!(t["tcp_flags_fwd"], Field::Str("APSF".into()));
        assert_eq!(t["rtt_src_count"], Field::Long(2));
        assert_eq!(t["rtt_src_min"], Field::Double(1e-6));
        assert_eq!(t["rtt_dst_count"], Field::Long(0));
        assert_eq!(t["rtt_dst_min"], Field::Null);
        assert_eq!(t["app"], Field::Null);
        assert_eq!(t["assured"], Field::Null);
        assert_eq!(t["src_ip_v4"], Field::Long(0x0a00_0002));
        // The uid is the JSON writer's with the same seed.
        let mut u = Vec::new();
        crate::uid_text(&mut u, crate::uid(&records[0].flow, 7));
        assert_eq!(t["uid"], Field::Str(String::from_utf8(u).unwrap()));
        assert_eq!(t["conn_state"], Field::Null);
        assert_eq!(t["retrans_fwd"], Field::Null);
        let udp = &rows[1];
        assert_eq!(udp["tcp_flags_fwd"], Field::Null);
        assert_eq!(udp["rtt_src_count"], Field::Null);
        let echo = &rows[2];
        assert_eq!(echo["proto"], Field::Str("icmp6".into()));
        assert_eq!(echo["icmp_id"], Field::Int(7));
        assert_eq!(echo["src_ip_v4"], Field::Null);
        let Field::Bytes(bin) = &echo["src_ip_bin"] else { panic!("{:?}", echo["src_ip_bin"]) };
        let bin: [u8; 16] = bin.data().try_into().unwrap();
        assert_eq!(std::net::Ipv6Addr::from(bin).to_string(), "fd77::2");
        let tls = &rows[3];
        assert_eq!(tls["app"], Field::Str("TLS.YouTube".into()));
        assert_eq!(tls["user_agent"], Field::Str("a \"quoted\", \\ agent".into()));
        assert_eq!(rows[4]["proto"], Field::Str("47".into()));
        let cid = community(&records[4]);
        let want = if cid.is_empty() { Field::Null } else { Field::Str(cid) };
        assert_eq!(rows[4]["community_id"], want);

        // A second writer adds files beside the first one's, never over them.
        let mut again = DatasetWriter::create(&root, Schema::Rampart).unwrap();
        again.write(&records[0]).unwrap();
        let more = again.finish().unwrap().clone();
        assert_eq!(more.files.len(), 1);
        assert_eq!(files_under(&root).len(), 4);
    }

    /// The v2 schema's columns: Zeek's names, `ts` as a timestamp, the connection fields,
    /// RTT in whole microseconds, all as JSON writes them.
    #[test]
    fn v2_columns() {
        use crate::tests::ended;
        use crate::{FlowFormat, FlowWriter};
        use rampart_flow::KeyKind;
        use rampart_tcpstate::{ConnState, ConnSummary, DirCounters};
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("ds");
        let mut r = ended(6, KeyKind::Ports, IpFamily::V4);
        let mut c = ConnSummary { state: ConnState::SF, ..ConnSummary::default() };
        c.dirs[0] = DirCounters { retrans: 1, out_of_order: 2, lost: 3, zero_window: 4 };
        c.dirs[1] = DirCounters { retrans: 5, out_of_order: 6, lost: 7, zero_window: 8 };
        r.conn = Some(c);
        let mut s = rampart_rtt::RttSummary::default();
        s.dirs[1] = rampart_rtt::DirSummary {
            count: 2,
            min: rampart_wire::Span::from_nanos(1_999),
            median: rampart_wire::Span::from_nanos(2_500),
            max: rampart_wire::Span::from_nanos(30_000),
        };
        r.rtt = Some(s);
        let mut w = DatasetWriter::create(&root, Schema::V2).unwrap().with_uid_seed(3);
        w.write(&r).unwrap();
        let written = w.finish().unwrap().clone();
        assert_eq!(written.rows, 1);
        let rows = rows(&written.files[0]);
        let t = &rows[0];
        assert_eq!(t["ts"], Field::TimestampMicros(1_700_000_000_000_001));
        assert_eq!(t["ts_end"], Field::TimestampMicros(1_700_000_001_500_000));
        assert_eq!(t["orig_h"], Field::Str("10.0.0.2".into()));
        assert_eq!(t["orig_p"], Field::Int(80));
        assert_eq!(t["orig_wire_bytes"], Field::Long(180));
        assert_eq!(t["conn_state"], Field::Str("SF".into()));
        assert_eq!(t["orig_retrans"], Field::Long(1));
        assert_eq!(t["resp_zero_window"], Field::Long(8));
        assert_eq!(t["rtt_orig_samples"], Field::Long(0));
        assert_eq!(t["rtt_orig_min_us"], Field::Null);
        assert_eq!(t["rtt_resp_min_us"], Field::Long(1));
        assert_eq!(t["rtt_resp_max_us"], Field::Long(30));
        assert_eq!(t["orig_ip_v4"], Field::Long(0x0a00_0002));
        assert!(!t.contains_key("src") && !t.contains_key("first"));
        // The same uid as the JSON writer's with the same seed.
        let mut j =
            FlowWriter::with_schema(Vec::new(), FlowFormat::Json, Schema::V2).with_uid_seed(3);
        j.write(&r).unwrap();
        let json = String::from_utf8(j.into_inner().unwrap()).unwrap();
        let Field::Str(uid) = &t["uid"] else { panic!("{:?}", t["uid"]) };
        assert!(json.contains(&format!("\"uid\":\"{uid}\"")), "{json}");
    }

    fn community(r: &FlowRecord) -> String {
        crate::community_id::of_flow(&r.flow, 0).map(|c| c.as_str().to_string()).unwrap_or_default()
    }

    #[test]
    fn refuses_a_directory_of_other_files() {
        let dir = tempfile::tempdir().unwrap();
        assert!(check_dataset_dir(&dir.path().join("new")).is_ok());
        assert!(check_dataset_dir(dir.path()).is_ok());
        let stray = dir.path().join("date=2024-01-01/hour=00/notes.txt");
        fs::create_dir_all(stray.parent().unwrap()).unwrap();
        fs::write(&stray, "x").unwrap();
        let e = DatasetWriter::create(dir.path(), Schema::V2).err().unwrap();
        assert!(matches!(&e, OpenError::NotADataset(p, _) if *p == stray), "{e}");
        assert!(e.to_string().contains("notes.txt"), "{e}");
        fs::remove_file(&stray).unwrap();
        fs::write(dir.path().join("flows.json"), "{}").unwrap();
        let e = DatasetWriter::create(dir.path(), Schema::V2).err().unwrap();
        assert!(e.to_string().contains("flows.json"), "{e}");
        let file = dir.path().join("flows.json");
        let e = check_dataset_dir(&file).err().unwrap();
        assert!(e.to_string().contains("not a directory"), "{e}");
    }

    #[test]
    fn publishing_never_replaces_a_file() {
        let dir = tempfile::tempdir().unwrap();
        let (tmp, path) = (dir.path().join(".t.tmp"), dir.path().join("part-x-0.parquet"));
        fs::write(&tmp, "new").unwrap();
        fs::write(&path, "old").unwrap();
        let e = publish(&tmp, &path).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::AlreadyExists);
        assert!(e.to_string().contains("part-x-0.parquet"));
        assert_eq!(fs::read_to_string(&path).unwrap(), "old");
        fs::remove_file(&path).unwrap();
        publish(&tmp, &path).unwrap();
        assert_eq!(fs::read_to_string(&path).unwrap(), "new");
        assert!(!tmp.exists());
    }
}
