"""The paper's analysis tooling on top of the mask layer: simulated errors, sensitivity
curves of the segmentation measures, synthetic low-resolution predictions and plots."""
