#!/bin/bash
#BSUB -x
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
