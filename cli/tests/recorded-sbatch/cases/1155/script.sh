#!/bin/bash
#BSUB -J lsf
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
