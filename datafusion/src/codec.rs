//! [`BitonicCodec`]: ships [`BitonicSortExec`] inside serialized plans (Ballista's scheduler
//! to its executors), and hands every other node to the codec it wraps.

use std::sync::Arc;

use bitonic::Sorter;
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::TaskContext;
use datafusion::logical_expr::{AggregateUDF, HigherOrderUDF, ScalarUDF, WindowUDF};
use datafusion::physical_expr::{LexOrdering, PhysicalExpr};
use datafusion::physical_expr_common::physical_expr::proto_decode::PhysicalExprDecodeCtx;
use datafusion::physical_expr_common::physical_expr::proto_encode::PhysicalExprEncodeCtx;
use datafusion::physical_plan::ExecutionPlan;
use datafusion_proto::physical_plan::from_proto::parse_physical_sort_exprs;
use datafusion_proto::physical_plan::to_proto::serialize_physical_sort_exprs;
use datafusion_proto::physical_plan::{
    DefaultPhysicalExtensionCodec, PhysicalExtensionCodec, PhysicalPlanDecodeContext,
    PhysicalProtoConverterExtension,
};
use datafusion_proto::protobuf::PhysicalSortExprNode;
use prost::Message;

use crate::exec::{BitonicSortExec, Ranges};

/// What starts every node this codec writes. A protobuf message never starts with a zero
/// byte (field number 0 is invalid), so the wrapped codec's nodes, which are protobuf
/// messages, are never mistaken for ours.
const MAGIC: &[u8] = b"\0bitonic-sort\x01";

/// A [`BitonicSortExec`] on the wire; the sort expressions (with their options) as
/// datafusion-proto writes them.
#[derive(Clone, PartialEq, Message)]
struct BitonicSortNode {
    #[prost(message, repeated, tag = "1")]
    expr: Vec<PhysicalSortExprNode>,
    #[prost(uint64, optional, tag = "2")]
    fetch: Option<u64>,
    #[prost(bool, tag = "3")]
    preserve_partitioning: bool,
    #[prost(bool, tag = "4")]
    stable_ties: bool,
    /// `Ranges::count`; absent for the session's `target_partitions`.
    #[prost(uint64, optional, tag = "5")]
    range_count: Option<u64>,
    /// `Ranges::min_rows`.
    #[prost(uint64, tag = "6")]
    range_min_rows: u64,
}

/// A `PhysicalExtensionCodec` for [`BitonicSortExec`] that passes every other node, and
/// every function, to the codec it wraps. Decoded nodes sort with this codec's [`Sorter`]
/// (the executor's own device).
///
/// For Ballista wrap its codec, on the scheduler and on every executor:
///
/// ```ignore
/// let codec = BitonicCodec::new(sorter, Arc::new(BallistaPhysicalExtensionCodec::default()));
/// let config = SessionConfig::new_with_ballista().with_ballista_physical_extension_codec(Arc::new(codec));
/// ```
#[derive(Debug)]
pub struct BitonicCodec {
    sorter: Arc<Sorter>,
    inner: Arc<dyn PhysicalExtensionCodec>,
}

impl BitonicCodec {
    /// The codec whose decoded sorts run on `sorter`, passing other nodes to `inner`.
    pub fn new(sorter: Arc<Sorter>, inner: Arc<dyn PhysicalExtensionCodec>) -> Self {
        Self { sorter, inner }
    }

    /// The codec for plain DataFusion (no other extension nodes).
    pub fn standalone(sorter: Arc<Sorter>) -> Self {
        Self::new(sorter, Arc::new(DefaultPhysicalExtensionCodec {}))
    }

    fn decode_sort(
        &self,
        buf: &[u8],
        inputs: &[Arc<dyn ExecutionPlan>],
        ctx: &TaskContext,
        proto_converter: &dyn PhysicalProtoConverterExtension,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let node = BitonicSortNode::decode(buf).map_err(|error| {
            DataFusionError::Internal(format!("malformed BitonicSortExec node: {error}"))
        })?;
        let [input] = inputs else {
            return Err(DataFusionError::Internal(format!(
                "a BitonicSortExec node has one input, not {}",
                inputs.len()
            )));
        };
        let decode_ctx = PhysicalPlanDecodeContext::new(ctx, self);
        let exprs =
            parse_physical_sort_exprs(&node.expr, &decode_ctx, &input.schema(), proto_converter)?;
        let expr = LexOrdering::new(exprs).ok_or_else(|| {
            DataFusionError::Internal("a BitonicSortExec node without sort keys".to_string())
        })?;
        let fetch = node
            .fetch
            .map(|fetch| {
                usize::try_from(fetch).map_err(|_| {
                    DataFusionError::Internal(format!("fetch {fetch} does not fit usize"))
                })
            })
            .transpose()?;
        Ok(Arc::new(
            BitonicSortExec::try_new(
                Arc::clone(input),
                expr,
                node.preserve_partitioning,
                fetch,
                Arc::clone(&self.sorter),
            )?
            .with_stable_ties(node.stable_ties)
            .with_ranges(Ranges {
                count: node.range_count.map(|count| count as usize),
                min_rows: node.range_min_rows as usize,
            }),
        ))
    }
}

impl PhysicalExtensionCodec for BitonicCodec {
    fn try_decode(
        &self,
        buf: &[u8],
        inputs: &[Arc<dyn ExecutionPlan>],
        ctx: &TaskContext,
        proto_converter: &dyn PhysicalProtoConverterExtension,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        match buf.strip_prefix(MAGIC) {
            Some(node) => self.decode_sort(node, inputs, ctx, proto_converter),
            None => self.inner.try_decode(buf, inputs, ctx, proto_converter),
        }
    }

    fn try_encode(
        &self,
        node: Arc<dyn ExecutionPlan>,
        buf: &mut Vec<u8>,
        proto_converter: &dyn PhysicalProtoConverterExtension,
    ) -> Result<()> {
        let Some(sort) = node.downcast_ref::<BitonicSortExec>() else {
            return self.inner.try_encode(node, buf, proto_converter);
        };
        let proto = BitonicSortNode {
            expr: serialize_physical_sort_exprs(
                sort.expr().iter().cloned(),
                self,
                proto_converter,
            )?,
            fetch: sort.fetch().map(|fetch| fetch as u64),
            preserve_partitioning: sort.preserve_partitioning(),
            stable_ties: sort.stable_ties(),
            range_count: sort.ranges().count.map(|count| count as u64),
            range_min_rows: sort.ranges().min_rows as u64,
        };
        buf.extend_from_slice(MAGIC);
        proto.encode(buf).map_err(|error| {
            DataFusionError::Internal(format!("encoding a BitonicSortExec node: {error}"))
        })
    }

    fn try_decode_udf(&self, name: &str, buf: &[u8]) -> Result<Arc<ScalarUDF>> {
        self.inner.try_decode_udf(name, buf)
    }

    fn try_encode_udf(&self, node: &ScalarUDF, buf: &mut Vec<u8>) -> Result<()> {
        self.inner.try_encode_udf(node, buf)
    }

    fn try_decode_higher_order_function(
        &self,
        name: &str,
        buf: &[u8],
    ) -> Result<Arc<HigherOrderUDF>> {
        self.inner.try_decode_higher_order_function(name, buf)
    }

    fn try_encode_higher_order_function(
        &self,
        node: &HigherOrderUDF,
        buf: &mut Vec<u8>,
    ) -> Result<()> {
        self.inner.try_encode_higher_order_function(node, buf)
    }

    fn try_decode_expr(
        &self,
        buf: &[u8],
        inputs: &[Arc<dyn PhysicalExpr>],
        ctx: &PhysicalExprDecodeCtx<'_>,
    ) -> Result<Arc<dyn PhysicalExpr>> {
        self.inner.try_decode_expr(buf, inputs, ctx)
    }

    fn try_encode_expr(
        &self,
        node: &Arc<dyn PhysicalExpr>,
        buf: &mut Vec<u8>,
        ctx: &PhysicalExprEncodeCtx<'_>,
    ) -> Result<()> {
        self.inner.try_encode_expr(node, buf, ctx)
    }

    fn try_decode_udaf(&self, name: &str, buf: &[u8]) -> Result<Arc<AggregateUDF>> {
        self.inner.try_decode_udaf(name, buf)
    }

    fn try_encode_udaf(&self, node: &AggregateUDF, buf: &mut Vec<u8>) -> Result<()> {
        self.inner.try_encode_udaf(node, buf)
    }

    fn try_decode_udwf(&self, name: &str, buf: &[u8]) -> Result<Arc<WindowUDF>> {
        self.inner.try_decode_udwf(name, buf)
    }

    fn try_encode_udwf(&self, node: &WindowUDF, buf: &mut Vec<u8>) -> Result<()> {
        self.inner.try_encode_udwf(node, buf)
    }
}
