/* Where the calling thread is in the launch grid (x dimension; the loaders
 * launch 1-D grids). Inline builtins: nothing to link. */
#ifndef GPU_DEVICE_GPU_H
#define GPU_DEVICE_GPU_H

/* Index of the thread in its workgroup. */
static inline unsigned int gpu_thread_id(void) {
  return __builtin_amdgcn_workitem_id_x();
}
/* Index of the workgroup in the grid. */
static inline unsigned int gpu_block_id(void) {
  return __builtin_amdgcn_workgroup_id_x();
}
/* Threads per workgroup. */
static inline unsigned int gpu_num_threads(void) {
  return __builtin_amdgcn_workgroup_size_x();
}
/* Workgroups in the grid. */
static inline unsigned int gpu_num_blocks(void) {
  return __builtin_amdgcn_grid_size_x() / __builtin_amdgcn_workgroup_size_x();
}
/* Lane of the thread in its 64-wide wavefront. */
static inline unsigned int gpu_lane_id(void) {
  return __builtin_amdgcn_mbcnt_hi(~0u, __builtin_amdgcn_mbcnt_lo(~0u, 0u));
}

#endif
